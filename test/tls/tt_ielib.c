/* A library with initial-exec TLS, dlopen'ed by tt_dlopen after its
 * threads exist. */
__thread int tt_ie_var __attribute__((tls_model("initial-exec"))) = 1234;
__thread char tt_ie_zero[32] __attribute__((tls_model("initial-exec")));

int tt_ie_get(void);
int tt_ie_get(void)
{
	for (int i = 0; i < 32; i++)
		if (tt_ie_zero[i])
			return -1;
	return tt_ie_var;
}

void tt_ie_set(int v);
void tt_ie_set(int v)
{
	tt_ie_var = v;
}
