/* placeholder until the public header lands */
#include_next <pthread.h>
