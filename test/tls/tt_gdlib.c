/* A library with ordinary (global-dynamic) TLS: reached through the DTV and
 * __tls_get_addr, allocated on first use in each thread's block. */
__thread int tt_gd_var = 77;

int tt_gd_get(void);
int tt_gd_get(void)
{
	return tt_gd_var;
}

void tt_gd_set(int v);
void tt_gd_set(int v)
{
	tt_gd_var = v;
}
