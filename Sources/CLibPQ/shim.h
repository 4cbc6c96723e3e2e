// libpq, the PostgreSQL client library (its API has no variadic or setjmp calls).
#include <libpq-fe.h>
