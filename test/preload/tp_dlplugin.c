/* The plugin tp_dlorigin loads by bare name through its RUNPATH $ORIGIN.
 * Its initial-exec TLS checks that libppl still initialises new static
 * TLS in user threads that existed before the dlopen. */
__thread int tp_plugin_tls __attribute__((tls_model("initial-exec"))) = 4242;

int tp_plugin_get_tls(void);
int tp_plugin_get_tls(void)
{
	return tp_plugin_tls;
}

/* Also defined by tp_dlorigin: dlsym(RTLD_NEXT) from the program finds this one. */
int tp_dl_probe(void);
int tp_dl_probe(void)
{
	return 2;
}
