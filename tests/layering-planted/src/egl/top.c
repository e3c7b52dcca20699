/* Valid: calls down.c, nothing calls back. */
void planted_down(void);

void
planted_top(void)
{
	planted_down();
}
