/* libppl's own extensions.  Plain POSIX programs never need them; they let a
 * program that knows it runs on libppl ask about the runtime. */
#ifndef PPL_H
#define PPL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Virtual processors running unbound user threads (0 before the first
 * pthread_create, when no VP has started yet). */
int ppl_vp_count(void);
/* Id of the VP the calling thread runs on, or -1 on a kernel thread that
 * libppl did not create (and before start-up). */
int ppl_current_vp(void);
/* Print the scheduler counters (as PPL_STATS=1 does at exit) to stderr. */
void ppl_stats_print(void);

#ifdef __cplusplus
}
#endif

#endif
