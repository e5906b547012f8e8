/* The dl* functions called from a program resolve names as without
 * libppl: the caller's link map decides the search path (its RUNPATH,
 * $ORIGIN) and the namespace.  The program has RUNPATH $ORIGIN and its
 * plugin, libtp_dlplugin.so, lies next to it: dlopen and dlmopen by bare
 * name find it, "$ORIGIN/..." names it, dlsym(RTLD_NEXT) from the program
 * finds the plugin's definition after the program's own, dladdr and
 * dlinfo describe it.  libppl's dlopen wrapper used to call the real
 * dlopen from inside libppl.so, so glibc searched libppl's RUNPATH and
 * expanded $ORIGIN to libppl's directory: the bare name was not found.
 * A thread that existed before the dlopen sees the plugin's
 * initial-exec TLS initialised (what the wrapper is for). */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <semaphore.h>

#include "tp_util.h"

#define PLUGIN "libtp_dlplugin.so"

int tp_dl_probe(void);
int tp_dl_probe(void)
{
	return 1;
}

static sem_t go, done;
static int (*get_tls)(void);
static int seen_tls;

static void *early(void *arg)
{
	(void)arg;
	while (sem_wait(&go) != 0)
		;
	seen_tls = get_tls();
	CHECK(sem_post(&done) == 0);
	return NULL;
}

int main(void)
{
	alarm(30);
	CHECK(sem_init(&go, 0, 0) == 0 && sem_init(&done, 0, 0) == 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, early, NULL));

	void *h = dlopen(PLUGIN, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		fprintf(stderr, "dlopen(\"%s\"): %s\n", PLUGIN, dlerror());
		return 1;
	}
	void *h2 = dlopen("$ORIGIN/" PLUGIN, RTLD_NOW);
	if (h2 != h) {
		fprintf(stderr, "dlopen(\"$ORIGIN/%s\"): %s\n", PLUGIN, h2 ? "another handle" : dlerror());
		return 1;
	}
	void *h3 = dlmopen(LM_ID_BASE, PLUGIN, RTLD_NOW);
	if (h3 != h) {
		fprintf(stderr, "dlmopen(LM_ID_BASE, \"%s\"): %s\n", PLUGIN, h3 ? "another handle" : dlerror());
		return 1;
	}

	/* The search after the program: the plugin (global), not the program. */
	int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "tp_dl_probe");
	CHECK(next != NULL && next() == 2);

	get_tls = (int (*)(void))dlsym(h, "tp_plugin_get_tls");
	CHECK(get_tls != NULL && get_tls() == 4242);
	Dl_info info;
	CHECK(dladdr((void *)get_tls, &info) != 0);
	CHECK(info.dli_fname != NULL && strstr(info.dli_fname, PLUGIN) != NULL);
	CHECK(info.dli_sname != NULL && strcmp(info.dli_sname, "tp_plugin_get_tls") == 0);

	/* dlinfo: the plugin's origin is the program's directory. */
	char origin[PATH_MAX + 1], exe[PATH_MAX + 1];
	CHECK(dlinfo(h, RTLD_DI_ORIGIN, origin) == 0);
	ssize_t n = readlink("/proc/self/exe", exe, PATH_MAX);
	CHECK(n > 0);
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	CHECK(slash != NULL);
	*slash = '\0';
	char real_origin[PATH_MAX], real_exe[PATH_MAX];
	CHECK(realpath(origin, real_origin) != NULL && realpath(exe, real_exe) != NULL);
	if (strcmp(real_origin, real_exe) != 0) {
		fprintf(stderr, "dlinfo origin %s, program in %s\n", real_origin, real_exe);
		return 1;
	}

	CHECK(sem_post(&go) == 0);
	while (sem_wait(&done) != 0)
		;
	CHECK_OK(pthread_join(t, NULL));
	CHECK(seen_tls == 4242);
	CHECK(dlclose(h3) == 0 && dlclose(h2) == 0 && dlclose(h) == 0);
	printf("dlopen, dlmopen, dlsym(RTLD_NEXT), dladdr, dlinfo from the program\n");
	return 0;
}
