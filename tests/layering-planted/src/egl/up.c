/* Planted: calls down.c, which calls back. */
void planted_down(void);

void
planted_up(void)
{
	planted_down();
}
