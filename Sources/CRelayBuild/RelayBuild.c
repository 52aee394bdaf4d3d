// The one value the build hands the binary: the git commit. Package.swift defines
// OAUTH_RELAY_BUILD_COMMIT for this file only (cSettings), as a quoted string. It is read through
// a function compiled here, not a static inline function in the header: a C target's defines
// reach its own compilations, never the Swift modules that import its header, so only this file is
// recompiled when the commit changes, and the binary relinked.
#include "CRelayBuild.h"

#ifndef OAUTH_RELAY_BUILD_COMMIT
#define OAUTH_RELAY_BUILD_COMMIT "unknown"
#endif

const char *oauth_relay_build_commit(void) {
    return OAUTH_RELAY_BUILD_COMMIT;
}
