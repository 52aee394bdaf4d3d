"""Writes a relay configuration with many routes and identities, for bench/config-scale.sh and
tests/integration/test_config_scale.py.

    python3 bench/scale_config.py --routes N --identities M --upstream URL --token-url URL
                                  [--listen ADDR] [--admin ADDR] [--workers W] [--variant TEXT] > relay.json

The routes are a mix, in this file order: exact hosts (`svc-NNNNN.scale.test`, half of them with
`/api/` and `/` prefixes of their own), wildcard hosts (`*.tenant-NNNNN.scale.test`), and path
prefixes on any host (`/p/NNNNN/`, every tenth with a longer `/p/NNNNN/v1/` beside it), in the
proportions 40 : 20 : 40. Whatever N, two routes are always there, so that the same requests
reach them in a small and a large configuration:

- the typical route, `svc-00003.scale.test` with `/api/` (`Host: svc-00003.scale.test`,
  `GET /api/orders`): an exact host, found by its hash;
- the last route in file order, `/p/99999/` on any host (`Host: a.b.c.unmatched.test`, a name
  the listener serves through `hosts`; `GET /p/99999/orders`): the worst case, reached after the
  exact host and each wildcard suffix of the Host missed, in the largest group of path prefixes.

Identities are `id-NNNNN`, client_credentials at `--token-url`; route i uses identity i mod M
(none when M is 0). `--variant` is appended to every upstream's path, so two files differ in
every route (a reload that changes all of them).
"""
import argparse
import json

TYPICAL = {"host": "svc-00003.scale.test", "pathPrefix": "/api/"}
WORST = {"pathPrefix": "/p/99999/"}


def matches(count):
    """`count` distinct route matches, the typical one among the first and the worst one last."""
    result = [dict(TYPICAL)]
    exact = max(1, count * 4 // 10)
    wildcard = count * 2 // 10
    index = 0
    while len(result) < exact:
        host = f"svc-{index:05d}.scale.test"
        if index != 3:
            result.append({"host": host, "pathPrefix": "/"})
        if index % 2 == 0 and len(result) < exact and index != 3:
            result.append({"host": host, "pathPrefix": "/api/"})
        index += 1
    for index in range(wildcard):
        result.append({"host": f"*.tenant-{index:05d}.scale.test"})
    index = 0
    while len(result) < count - 1:
        result.append({"pathPrefix": f"/p/{index:05d}/"})
        if index % 10 == 0 and len(result) < count - 1:
            result.append({"pathPrefix": f"/p/{index:05d}/v1/"})
        index += 1
    result.append(dict(WORST))
    return result[:count]


def config(args):
    identities = {
        f"id-{index:05d}": {"tokenUrl": args.token_url, "grant": "client_credentials",
                            "clientId": f"client-{index:05d}", "clientSecret": f"secret-{index:05d}"}
        for index in range(args.identities)
    }
    routes = []
    for index, match in enumerate(matches(args.routes)):
        route = {"match": match, "upstream": args.upstream + args.variant}
        if args.identities:
            route["identity"] = f"id-{index % args.identities:05d}"
        routes.append(route)
    # A loopback listener answers only the names it serves (DNS rebinding): the routes' hosts,
    # and the worst case's, listed here.
    return {"listen": args.listen, "admin": args.admin, "workers": args.workers, "accessLog": False,
            "hosts": ["*.unmatched.test"], "identities": identities, "routes": routes}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", type=int, required=True)
    parser.add_argument("--identities", type=int, default=0)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--token-url", default="http://127.0.0.1:9/token")
    parser.add_argument("--listen", default="127.0.0.1:8180")
    parser.add_argument("--admin", default="127.0.0.1:9180")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--variant", default="")
    args = parser.parse_args()
    if args.routes < 2:
        parser.error("--routes must be at least 2 (the typical and the worst route)")
    print(json.dumps(config(args), indent=1))


if __name__ == "__main__":
    main()
