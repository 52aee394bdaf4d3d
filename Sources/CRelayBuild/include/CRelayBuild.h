#ifndef OAUTH_RELAY_CRELAYBUILD_H
#define OAUTH_RELAY_CRELAYBUILD_H

/// The git commit the binary was built from (lower-case hex), or "unknown" for a build that was
/// not told (Package.swift: OAUTH_RELAY_COMMIT). A static string; never NULL.
const char *oauth_relay_build_commit(void);

#endif
