/* test/glibc/include/config.h: what the test driver (support/) needs of the
   config.h glibc's configure writes, for a build against the installed
   glibc.  support_test_main.c scales its timeout by TIMEOUTFACTOR (the
   environment variable of that name overrides it); temp_file.c wants
   NAME_MAX; scratch_buffer.h declares a GLIBC_PRIVATE function of libc.so
   with libc_hidden_proto, which only means something inside libc.  */
#define TIMEOUTFACTOR 1
#include <limits.h>
#define libc_hidden_proto(name)
