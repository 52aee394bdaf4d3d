"""What kind of relay build the tests run against.

OAUTH_RELAY_TEST_SANITIZER names the sanitizer the binary was built with (`address` in
`make test-asan`, `thread` in `make test-tsan`; unset otherwise). A sanitized relay keeps freed
memory in a quarantine and its shadow memory grows with use, so its RSS says nothing about what
the relay itself holds: memory bounds are checked on unsanitized builds only.
"""

import os

SANITIZER = os.environ.get("OAUTH_RELAY_TEST_SANITIZER") or None
