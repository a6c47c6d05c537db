/* testutil.h — included by every cmocka suite. */
#ifndef DEBERTA_TESTUTIL_H
#define DEBERTA_TESTUTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#endif
