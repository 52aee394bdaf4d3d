#ifndef OAUTH_RELAY_CLLHTTP_SHIM_H
#define OAUTH_RELAY_CLLHTTP_SHIM_H
#include <llhttp.h>
#endif
