"""Scrapy crawling the layercrawl test web: the peer in the benchmark suite.

Same work as `layercrawl run --depth D --scope domain --per-host N --delay MS`:
the same seeds, robots.txt obeyed, links followed within each seed's
registrable domain to the same depth, at most N requests at once per host and
the same delay; every page's title, text and links extracted. The test web's
hosts (*.test) resolve to one loopback port, which Scrapy reaches as an HTTP
proxy (the web routes on the Host header).

    python scrapy_crawl.py --seeds FILE --proxy http://127.0.0.1:PORT --depth 3 \
        --per-host 8 --concurrency 256 --delay-ms 0 --out DIR

Writes DIR/pages.jsonl, one line a URL: the page's item for a 2xx response
(`url`, `status`, `title`, `text`, `links`), or, for a request that ended
without one (an error status after its retries, a timeout, a redirect loop,
robots.txt), `url` (as requested, before redirects), `status` (the last
response's, or null) and `error` (the exception's name). Prints one JSON
line: pages (HTTP responses other than robots.txt), seconds,
pages_per_second, items.
"""

import argparse
import json
import os
import sys
import time
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor


def registrable_domain(host):
    # The test web's sites are sNNN.test and blog.sNNN.test: the last two labels.
    return ".".join(host.split(".")[-2:])


class TestWebSpider(scrapy.Spider):
    name = "testweb"

    def __init__(self, seeds, **kw):
        super().__init__(**kw)
        self.start_urls = seeds
        hosts = {urlsplit(u).hostname for u in seeds}
        self.allowed_domains = sorted({registrable_domain(h) for h in hosts})
        # Not LinkExtractor(allow_domains=...): Scrapy matches those against
        # the URL's netloc, port included, so a site on a port other than 80
        # (the real-site corpus) would have no in-scope link at all.
        self.links = LinkExtractor()

    def _starts(self):
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.failed, dont_filter=True)

    async def start(self):  # Scrapy 2.13 on
        for r in self._starts():
            yield r

    def start_requests(self):  # before 2.13
        return self._starts()

    def failed(self, failure):
        """A request that ended without a page: its outcome, as a record."""
        request = failure.request
        response = getattr(failure.value, "response", None)
        yield {
            "url": request.meta.get("redirect_urls", [request.url])[0],
            "status": response.status if response is not None else None,
            "error": failure.type.__name__,
        }

    def parse(self, response):
        if not isinstance(response, scrapy.http.TextResponse):
            return
        text = " ".join(t.strip() for t in response.xpath("//body//text()[not(ancestor::script) and not(ancestor::style)]").getall() if t.strip())
        allowed = set(self.allowed_domains)
        links = [l for l in self.links.extract_links(response) if registrable_domain(urlsplit(l.url).hostname or "") in allowed]
        yield {
            "url": response.url,
            "status": response.status,
            "title": response.xpath("//title/text()").get(),
            "text": text,
            "links": len(links),
        }
        for link in links:
            yield response.follow(link.url, callback=self.parse, errback=self.failed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", required=True)
    ap.add_argument("--proxy", required=True)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--per-host", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--delay-ms", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    seeds = [l.strip() for l in open(a.seeds) if l.strip() and not l.startswith("#")]
    os.makedirs(a.out, exist_ok=True)
    os.environ["http_proxy"] = a.proxy
    os.environ.pop("no_proxy", None)
    os.environ.pop("NO_PROXY", None)
    settings = {
        "ROBOTSTXT_OBEY": True,
        "DEPTH_LIMIT": a.depth,
        # Breadth-first, as layercrawl's layers: every URL is reached at its
        # smallest depth. Scrapy's default order is depth-first (LIFO), which
        # with DEPTH_LIMIT drops pages first met on a long path and then
        # filtered as duplicates when a shorter path finds them (its own docs:
        # "Does Scrapy crawl in breadth-first or depth-first order?").
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "CONCURRENT_REQUESTS": a.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": a.per_host,
        "DOWNLOAD_DELAY": a.delay_ms / 1000.0,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "RETRY_TIMES": 2,
        "DOWNLOAD_TIMEOUT": 30,
        "LOG_LEVEL": os.environ.get("SCRAPY_LOG","WARNING"),
        "REACTOR_THREADPOOL_MAXSIZE": 4,
        "FEEDS": {os.path.join(a.out, "pages.jsonl"): {"format": "jsonlines", "overwrite": True}},
    }
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(TestWebSpider)
    t = time.monotonic()
    process.crawl(crawler, seeds=seeds)
    process.start()
    seconds = time.monotonic() - t
    stats = crawler.stats.get_stats()
    responses = stats.get("response_received_count", 0)
    robots = stats.get("robotstxt/response_count", 0)
    pages = responses - robots
    print(json.dumps({
        "pages": pages,
        "items": stats.get("item_scraped_count", 0),
        "seconds": seconds,
        "pages_per_second": pages / seconds if seconds else 0.0,
        "robots_forbidden": stats.get("robotstxt/forbidden", 0),
    }))


if __name__ == "__main__":
    sys.exit(main())
