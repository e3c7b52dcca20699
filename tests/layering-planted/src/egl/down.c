/* Planted: calls up.c, which called it. */
void planted_up(void);

void
planted_down(void)
{
	planted_up();
}
