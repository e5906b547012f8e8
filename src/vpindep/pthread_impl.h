/* The VP-independent module's private interfaces, all of them: each part
 * has its own header, which a .c file includes for what it uses; this
 * umbrella is for the unit tests and whatever needs everything. */
#ifndef PPL_PTHREAD_IMPL_H
#define PPL_PTHREAD_IMPL_H

#include "attr.h"
#include "base.h"
#include "cancel.h"
#include "cpuclock.h"
#include "fork.h"
#include "monitor.h"
#include "mutex.h"
#include "preempt.h"
#include "runtime.h"
#include "schedparam.h"
#include "scheduler.h"
#include "sig.h"
#include "stack.h"
#include "thread.h"
#include "timer.h"
#include "ult.h"
#include "vproc.h"
#include "waitq.h"

#endif
