#!/usr/bin/env python3
"""A plain breadth-first reference walker: the ground truth of the real-site
corpus, written apart from layercrawl (Python's standard library only), so
that a bug of the crawler cannot hide in its own yardstick.

From the seeds it follows every <a href> whose host is a seed's host, drops
fragments, obeys robots.txt (urllib.robotparser), follows redirects within
the seed hosts, and records every URL reached within --depth hops: its
smallest depth, HTTP status and content type. It talks to loopback only:
--resolve HOST:PORT=IP:PORT says where each host is served.

    bfs_walker.py --depth 3 --resolve a.test:8081=127.0.0.2:8081 http://a.test:8081/index.html > truth.json
"""

import argparse
import concurrent.futures
import http.client
import json
import sys
import urllib.parse
import urllib.robotparser
from html.parser import HTMLParser

MAX_BODY = 10 << 20
MAX_REDIRECTS = 10
AGENT = "layercrawl-truth"


class Links(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs = []
        self.base = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        elif tag == "base" and a.get("href") and self.base is None:
            self.base = a["href"]


class Walker:
    def __init__(self, resolve, timeout):
        self.resolve = resolve
        self.timeout = timeout
        self.robots = {}

    def get(self, url):
        """One GET: (status, content type, location, body)."""
        u = urllib.parse.urlsplit(url)
        netloc = u.netloc.lower()
        if netloc not in self.resolve:
            raise ValueError(f"{netloc} is not a --resolve'd host: refusing to leave loopback")
        ip, port = self.resolve[netloc]
        conn = http.client.HTTPConnection(ip, port, timeout=self.timeout)
        try:
            path = u.path or "/"
            if u.query:
                path += "?" + u.query
            conn.request("GET", path, headers={"Host": netloc, "User-Agent": AGENT})
            r = conn.getresponse()
            body = r.read(MAX_BODY)
            return r.status, r.getheader("Content-Type", ""), r.getheader("Location"), body
        finally:
            conn.close()

    def allowed(self, url):
        netloc = urllib.parse.urlsplit(url).netloc.lower()
        if netloc not in self.robots:
            rp = urllib.robotparser.RobotFileParser()
            try:
                status, _, _, body = self.get(f"http://{netloc}/robots.txt")
            except OSError:
                status, body = 599, b""
            if status >= 500:
                rp.disallow_all = True
            elif status >= 400:
                rp.allow_all = True
            else:
                rp.parse(body.decode("utf-8", "replace").splitlines())
            self.robots[netloc] = rp
        return self.robots[netloc].can_fetch(AGENT, url)

    def fetch(self, url, hosts):
        """Follows redirects within `hosts`; returns (final URL, status, type, links)."""
        for _ in range(MAX_REDIRECTS + 1):
            try:
                status, ctype, location, body = self.get(url)
            except OSError as e:
                return url, 0, f"error: {e}", []
            if status in (301, 302, 303, 307, 308) and location:
                target = urllib.parse.urldefrag(urllib.parse.urljoin(url, location))[0]
                if urllib.parse.urlsplit(target).netloc.lower() not in hosts or not self.allowed(target):
                    return url, status, ctype, []
                url = target
                continue
            links = []
            if status == 200 and ctype.split(";")[0].strip().lower() in ("text/html", "application/xhtml+xml"):
                charset = "utf-8"
                if "charset=" in ctype.lower():
                    charset = ctype.lower().split("charset=")[1].split(";")[0].strip() or "utf-8"
                p = Links()
                try:
                    p.feed(body.decode(charset, "replace"))
                except (LookupError, AssertionError):
                    p.feed(body.decode("utf-8", "replace"))
                base = urllib.parse.urljoin(url, p.base) if p.base else url
                for h in p.hrefs:
                    t = urllib.parse.urldefrag(urllib.parse.urljoin(base, h.strip()))[0]
                    if urllib.parse.urlsplit(t).scheme == "http":
                        links.append(t)
            return url, status, ctype, links
        return url, 0, "error: too many redirects", []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--resolve", action="append", default=[], help="HOST:PORT=IP:PORT (loopback only)")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("seeds", nargs="+")
    a = ap.parse_args()
    resolve = {}
    for r in a.resolve:
        name, addr = r.split("=", 1)
        ip, port = addr.rsplit(":", 1)
        if not ip.startswith("127."):
            sys.exit(f"--resolve {r}: only loopback addresses (127.0.0.0/8)")
        resolve[name.lower()] = (ip, int(port))
    hosts = {urllib.parse.urlsplit(s).netloc.lower() for s in a.seeds}
    w = Walker(resolve, a.timeout)
    seen = {}
    frontier = []
    for s in a.seeds:
        s = urllib.parse.urldefrag(s)[0]
        if s not in seen:
            seen[s] = {"depth": 0}
            frontier.append(s)
    with concurrent.futures.ThreadPoolExecutor(a.threads) as pool:
        for depth in range(a.depth + 1):
            todo = []
            for url in frontier:
                if w.allowed(url):
                    todo.append(url)
                else:
                    seen[url]["robots"] = True
            nxt = []
            for url, (final, status, ctype, links) in zip(todo, pool.map(lambda u: w.fetch(u, hosts), todo)):
                seen[url].update({"status": status, "type": ctype.split(";")[0].strip().lower(), "final": final})
                if depth == a.depth:
                    continue
                for t in links:
                    if urllib.parse.urlsplit(t).netloc.lower() in hosts and t not in seen:
                        seen[t] = {"depth": depth + 1}
                        nxt.append(t)
            frontier = nxt
    json.dump(seen, sys.stdout, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
