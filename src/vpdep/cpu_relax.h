/* The one architecture hint C cannot express: a spin-wait pause. */
#ifndef PPL_CPU_RELAX_H
#define PPL_CPU_RELAX_H

#if defined(__x86_64__) || defined(__i386__)
static inline void cpu_relax(void) { __builtin_ia32_pause(); }
#elif defined(__aarch64__)
static inline void cpu_relax(void) { __asm__ __volatile__("yield" ::: "memory"); }
#else
static inline void cpu_relax(void) { __asm__ __volatile__("" ::: "memory"); }
#endif

#endif
