#!/usr/bin/env python3
"""scripts/bfs_walker.py, obeying nofollow as crawlers do: a link whose rel
says nofollow is not followed, nor any link of a page whose robots meta tag
says nofollow (or none). Web applications mark their generated views so
(DokuWiki: every action link, and its action pages and old revisions); the
plain walker follows them, and this one gives what a polite crawler can
reach. Same arguments and output as bfs_walker.py, and --ignore-nofollow,
which follows every link as bfs_walker.py does but percent-encodes what a
URL cannot hold, as browsers do (bfs_walker.py stops at a link with a
space, which Fossil's rendered Markdown has).

    nofollow_walker.py --depth 3 --resolve a.test:8081=127.0.0.2:8081 http://a.test:8081/ > truth.json
"""

import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bfs_walker  # noqa: E402


OBEY = True


class PoliteLinks(bfs_walker.Links):
    def __init__(self):
        super().__init__()
        self.page_nofollow = False
        self.kept = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "meta" and (a.get("name") or "").lower() == "robots":
            tokens = {t.strip().lower() for t in (a.get("content") or "").split(",")}
            if tokens & {"nofollow", "none"} and OBEY:
                self.page_nofollow = True
        if OBEY and tag == "a" and a.get("href") and "nofollow" in (a.get("rel") or "").lower().split():
            return
        # As browsers (and layercrawl) do, a space or other character a URL
        # cannot hold is percent-encoded (a Markdown page links "a b/").
        attrs = [(k, urllib.parse.quote(v, safe="%/:=&?#+!$,;'@()*[]~") if k == "href" and v else v) for k, v in attrs]
        super().handle_starttag(tag, attrs)

    @property
    def hrefs(self):
        return [] if self.page_nofollow else self.kept

    @hrefs.setter
    def hrefs(self, value):
        self.kept = value


if __name__ == "__main__":
    if "--ignore-nofollow" in sys.argv:
        sys.argv.remove("--ignore-nofollow")
        OBEY = False
    bfs_walker.Links = PoliteLinks
    bfs_walker.main()
