// layercrawl report: draws the figures embedded in this page (the JSON in
// #report-data, aggregated by `layercrawl report`). Charts are inline SVG,
// graphs a force layout on canvas; no library, no network.
(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('report-data').textContent);
  const SVGNS = 'http://www.w3.org/2000/svg';
  const PALETTE = ['#2f6fdb', '#e8833a', '#3aa675', '#c8485a', '#8a63d2', '#c2a03b', '#3fa7c4', '#d76fb0',
    '#6b7a8f', '#7fb13d', '#a05a2c', '#4b5bbf', '#d4a5a5', '#2f8f8f', '#9c9c3a', '#b34fa0'];
  const OUTCOME_COLOURS = { ok: '#3aa675', other: '#a9b4c2', robots: '#d5d9e0', http_4xx: '#e8833a', http_5xx: '#c8485a' };
  const NOISE_COLOURS = { none: '#3aa675', dom_ratio: '#c2a03b', scope: '#a9b4c2', nofollow: '#6b7a8f',
    lcs_cluster: '#8a63d2', trap: '#c8485a', barren: '#e8833a', rule: '#3fa7c4' };

  // ---- helpers ----
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
    }
    for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
    }
    for (const k of kids.flat()) if (k) e.append(k);
    return e;
  }
  function titled(node, text) { node.append(svg('title', { text })); return node; }
  const num = (n) => (n === undefined || n === null) ? '-' : Number(n).toLocaleString('en-US');
  function bytes(n) {
    const u = ['B', 'KB', 'MB', 'GB', 'TB'];
    let i = 0; let v = Number(n);
    while (v >= 1000 && i < u.length - 1) { v /= 1000; i++; }
    return (i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)) + ' ' + u[i];
  }
  function ms(n) {
    const v = Number(n);
    if (v < 1000) return v + ' ms';
    if (v < 60000) return (v / 1000).toFixed(v < 10000 ? 1 : 0) + ' s';
    return (v / 60000).toFixed(1) + ' min';
  }
  function colour(key, fixed, i) { return (fixed && fixed[key]) || PALETTE[i % PALETTE.length]; }
  function hashColour(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return PALETTE[(h >>> 0) % PALETTE.length];
  }
  function legend(items) {
    return el('div', { class: 'legend' }, items.map(([label, c]) => el('span', {}, el('i', { style: 'background:' + c }), label)));
  }
  function table(head, rows, opts) {
    const t = el('table', opts && opts.id ? { id: opts.id } : {});
    t.append(el('thead', {}, el('tr', {}, head.map((h) => el('th', { text: h })))));
    const body = el('tbody');
    for (const r of rows) body.append(el('tr', {}, r.map((c) => c instanceof Node ? el('td', {}, c) : el('td', { text: c }))));
    t.append(body);
    return t;
  }
  function empty(text) { return el('p', { class: 'empty', text }); }

  // ---- header and overview ----
  function overview() {
    const t = D.totals;
    const bits = [D.data, 'generated ' + D.generated, 'layercrawl ' + D.version, D.partitions + ' partitions'];
    if (D.depth !== null && D.depth !== undefined) bits.push('depth ' + D.depth);
    if (D.denoise) bits.push('--denoise ' + D.denoise);
    bits.push(D.merged ? 'finished (merged)' : 'not finished');
    document.getElementById('meta').textContent = bits.join(' \u00b7 ');
    const cards = [
      [num(D.layers.length), 'layers'], [num(t.pages), 'rows (URLs requested or skipped)'], [num(t.ok), 'ok'],
      [num(t.errors), 'errors'], [num(t.robots), 'disallowed by robots.txt'], [bytes(t.bytes), 'body bytes received'],
      [num(t.hosts), 'hosts'], [num(t.link_rows), 'links'], [num(t.duplicates), 'pages copying another'],
      [ms(D.latency.p50), 'median fetch time'],
    ];
    if (D.entities) cards.push([num(D.entities.mentions), 'entity mentions']);
    const box = document.getElementById('totals');
    for (const [v, label] of cards) box.append(el('div', { class: 'card' }, el('b', { text: v }), el('span', { text: label })));
    document.getElementById('footer').textContent = 'Made by layercrawl report ' + D.version + ' from ' + D.data + '. Figures are aggregates; the crawl itself is in its Parquet files.';
  }

  // ---- funnel ----
  function funnel() {
    const host = document.getElementById('funnel-chart');
    if (!D.layers.length) { host.append(empty('No layer has committed yet.')); return; }
    const W = 900; const rowH = 20; const labelW = 250; const valueW = 110; const barW = W - labelW - valueW;
    let y = 0;
    const g = svg('g');
    const unitColour = { urls: '#2f6fdb', rows: '#3aa675', links: '#e8833a' };
    for (const l of D.layers) {
      const max = Math.max(1, ...l.funnel.map((s) => s.count));
      const scale = (c) => c <= 0 ? 0 : Math.max(2, barW * Math.log10(1 + c) / Math.log10(1 + max));
      const last = typeof D.depth === 'number' && l.layer >= D.depth;
      const note = l.sealed ? '' : last ? ' (the last layer: its links lead nowhere further)' : ' (next layer\u2019s input not made yet)';
      g.append(svg('text', { x: 0, y: y + 14, 'font-weight': 600, text: 'Layer ' + l.layer + note }));
      y += 20;
      for (const s of l.funnel) {
        g.append(svg('text', { x: labelW - 8, y: y + 13, 'text-anchor': 'end', text: s.name }));
        g.append(titled(svg('rect', { x: labelW, y: y + 2, width: scale(s.count), height: rowH - 6, rx: 2, fill: unitColour[s.unit] || '#888' }), s.name + ': ' + num(s.count) + ' ' + s.unit));
        g.append(svg('text', { x: labelW + scale(s.count) + 6, y: y + 13, text: num(s.count) + ' ' + s.unit }));
        y += rowH;
      }
      y += 10;
    }
    host.append(svg('svg', { viewBox: '0 0 ' + W + ' ' + y, role: 'img', 'aria-label': 'funnel per layer' }, g));
    host.append(legend([['URLs', unitColour.urls], ['rows', unitColour.rows], ['links', unitColour.links]]));
    const steps = [];
    for (const l of D.layers) for (const s of l.funnel) if (!steps.includes(s.name)) steps.push(s.name);
    const rows = steps.map((name) => [name].concat(D.layers.map((l) => { const s = l.funnel.find((x) => x.name === name); return s ? num(s.count) : '-'; })));
    const extra = [
      ['carried over unfetched'].concat(D.layers.map((l) => num(l.summary.carried))),
      ['stragglers'].concat(D.layers.map((l) => num(l.summary.stragglers))),
      ['seconds'].concat(D.layers.map((l) => l.summary.seconds ? l.summary.seconds.toFixed(1) : '-')),
      ['map tasks committed'].concat(D.layers.map((l) => l.partitions_done + ' / ' + D.partitions)),
    ];
    document.getElementById('funnel-table').append(table(['step'].concat(D.layers.map((l) => 'layer ' + l.layer)), rows.concat(extra)));
  }

  // ---- statuses ----
  function stackedBars(hostId, series, keysOrder, fixed, label) {
    const host = document.getElementById(hostId);
    const W = 900; const labelW = 70; const rowH = 26; const barW = W - labelW - 10;
    const keys = keysOrder;
    const g = svg('g');
    series.forEach((s, i) => {
      const total = keys.reduce((a, k) => a + (s.values[k] || 0), 0);
      const y = i * rowH;
      g.append(svg('text', { x: 0, y: y + 16, text: s.name }));
      let x = labelW;
      keys.forEach((k, j) => {
        const v = s.values[k] || 0;
        if (!v) return;
        const w = Math.max(1, barW * v / Math.max(1, total));
        g.append(titled(svg('rect', { x, y: y + 3, width: w, height: rowH - 8, fill: colour(k, fixed, j) }), s.name + ' \u00b7 ' + k + ': ' + num(v) + ' (' + (100 * v / total).toFixed(1) + ' %)'));
        x += w;
      });
      if (!total) g.append(svg('text', { x: labelW, y: y + 16, class: 'empty', text: 'no ' + label }));
    });
    host.append(svg('svg', { viewBox: '0 0 ' + W + ' ' + Math.max(rowH, series.length * rowH), role: 'img', 'aria-label': label }, g));
    host.append(legend(keys.map((k, j) => [k, colour(k, fixed, j)])));
  }
  function statuses() {
    const order = ['ok', 'other', 'robots', 'http_4xx', 'http_5xx'];
    const kinds = new Set();
    for (const l of D.layers) for (const k of Object.keys(l.rows.outcomes)) if (!order.includes(k)) kinds.add(k);
    const keys = order.concat([...kinds].sort()).filter((k) => D.layers.some((l) => l.rows.outcomes[k]));
    stackedBars('status-chart', D.layers.map((l) => ({ name: 'layer ' + l.layer, values: l.rows.outcomes })), keys, OUTCOME_COLOURS, 'rows');
    const classes = [...new Set(D.layers.flatMap((l) => Object.keys(l.rows.statuses)))].sort();
    const rows = keys.map((k) => [k].concat(D.layers.map((l) => num(l.rows.outcomes[k] || 0))))
      .concat(classes.map((c) => ['status ' + c].concat(D.layers.map((l) => num(l.rows.statuses[c] || 0)))))
      .concat([['retries'].concat(D.layers.map((l) => num(l.summary.retries)))],
        [["hosts down"].concat(D.layers.map((l) => num(l.summary.hosts_down)))]);
    document.getElementById('status-table').append(table(['outcome'].concat(D.layers.map((l) => 'layer ' + l.layer)), rows));
  }

  // ---- hosts ----
  function hosts() {
    const cols = [
      ['host', (r) => r.host, (v) => v],
      ['pages', (r) => r.pages, num], ['ok', (r) => r.ok, num], ['errors', (r) => r.errors, num],
      ['robots', (r) => r.robots, num], ['median fetch', (r) => r.median_ms, ms], ['bytes', (r) => r.bytes, bytes],
    ];
    const rows = D.hosts.rows.slice();
    const t = document.getElementById('host-table');
    const head = el('tr');
    const body = el('tbody');
    let sortBy = 1; let dir = -1;
    cols.forEach(([name], i) => {
      const th = el('th', { class: 'sort', 'data-col': i, scope: 'col', text: name });
      th.addEventListener('click', () => {
        if (sortBy === i) dir = -dir; else { sortBy = i; dir = i === 0 ? 1 : -1; }
        draw();
      });
      head.append(th);
    });
    t.append(el('thead', {}, head), body);
    const filter = document.getElementById('host-filter');
    function draw() {
      const key = cols[sortBy][1];
      rows.sort((a, b) => { const x = key(a); const y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * dir || (a.host < b.host ? -1 : 1); });
      head.querySelectorAll('th').forEach((th, i) => {
        if (i === sortBy) th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending'); else th.removeAttribute('aria-sort');
      });
      const q = filter.value.trim().toLowerCase();
      body.replaceChildren(...rows.filter((r) => !q || r.host.toLowerCase().includes(q))
        .map((r) => el('tr', {}, cols.map(([, get, show]) => el('td', { text: show(get(r)) })))));
      if (D.hosts.rest && !q) {
        const r = D.hosts.rest;
        body.append(el('tr', { class: 'rest' }, [r.host, num(r.pages), num(r.ok), num(r.errors), num(r.robots), '-', bytes(r.bytes)].map((c) => el('td', { text: c }))));
      }
    }
    filter.addEventListener('input', draw);
    draw();
    document.getElementById('hosts-note').textContent = num(D.totals.hosts) + ' hosts' +
      (D.hosts.rest ? '; the ' + num(D.hosts.rows.length) + ' with the most rows are listed, the others summed' : '') +
      '. Click a column to sort. Errors count failed requests and HTTP errors; bytes are bodies received (pages carried forward after a 304 cost none).';
  }

  // ---- histograms ----
  function histogram(hostId, noteId, h, fmt) {
    const host = document.getElementById(hostId);
    if (!h.n) { host.append(empty('No values.')); return; }
    const W = 560; const H = 220; const left = 44; const bottom = 34; const top = 8;
    const max = Math.max(...h.counts);
    const bw = (W - left) / h.counts.length;
    const g = svg('g');
    for (let i = 0; i <= 4; i++) {
      const y = top + (H - top - bottom) * (1 - i / 4);
      g.append(svg('line', { x1: left, x2: W, y1: y, y2: y, class: 'grid-line' }));
      g.append(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', text: num(Math.round(max * i / 4)) }));
    }
    h.counts.forEach((c, i) => {
      const bh = (H - top - bottom) * c / max;
      const lo = h.lows[i]; const hi = lo === 0 ? 1 : lo * 2;
      const range = lo === 0 ? fmt(0) : fmt(lo) + ' to ' + fmt(hi);
      g.append(titled(svg('rect', { x: left + i * bw + 1, y: H - bottom - bh, width: Math.max(1, bw - 2), height: Math.max(c ? 1 : 0, bh), fill: '#2f6fdb' }), range + ': ' + num(c)));
      if (i % Math.ceil(h.counts.length / 8) === 0) {
        g.append(svg('text', { x: left + i * bw + bw / 2, y: H - bottom + 14, 'text-anchor': 'middle', text: fmt(lo) }));
      }
    });
    g.append(svg('line', { x1: left, x2: W, y1: H - bottom, y2: H - bottom, class: 'axis' }));
    host.append(svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' }, g));
    document.getElementById(noteId).textContent = num(h.n) + ' values; median ' + fmt(h.p50) + ', 90th percentile ' + fmt(h.p90) + ', 99th ' + fmt(h.p99) + ', largest ' + fmt(h.max) + '. Buckets double in width.';
  }

  // ---- noise and dedup ----
  function noise() {
    const order = ['none', 'dom_ratio', 'scope', 'nofollow', 'lcs_cluster', 'barren', 'trap', 'rule'];
    const seen = new Set();
    for (const l of D.layers) for (const k of Object.keys(l.links.noise)) seen.add(k);
    const keys = order.filter((k) => seen.has(k)).concat([...seen].filter((k) => !order.includes(k)).sort());
    const series = D.layers.map((l) => ({ name: 'layer ' + l.layer, values: Object.fromEntries(Object.entries(l.links.noise).map(([k, v]) => [k, v.links])) }));
    stackedBars('noise-chart', series, keys, NOISE_COLOURS, 'links');
    const rows = keys.map((k) => [k].concat(D.layers.map((l) => { const c = l.links.noise[k]; return c ? num(c.links) + ' (' + num(c.followed) + ' followed)' : '-'; })));
    document.getElementById('noise-table').append(table(['label'].concat(D.layers.map((l) => 'layer ' + l.layer)), rows));
    const s = (f) => D.layers.map((l) => num(f(l)));
    document.getElementById('dedup-table').append(table(['figure'].concat(D.layers.map((l) => 'layer ' + l.layer)), [
      ['repeats caught by the visit list'].concat(s((l) => l.summary.visit_hits)),
      ['by the cache list'].concat(s((l) => l.summary.cache_hits)),
      ['by the visited store'].concat(s((l) => l.summary.store_hits)),
      ['targets judged noise by LCS clustering'].concat(s((l) => l.summary.lcs_noise)),
      ['trap targets'].concat(s((l) => l.summary.traps)),
      ['targets skipped: their link classes brought nothing new'].concat(s((l) => l.summary.barren)),
      ['pages copying an earlier page'].concat(s((l) => l.rows.duplicates)),
      ['pages carried forward (304)'].concat(s((l) => l.rows.unchanged)),
    ]));
    const sk = document.getElementById('skipped-classes');
    if (!D.skipped_classes.length) sk.append(empty('The noise filter skipped no URL.'));
    else sk.append(el('div', { class: 'scroll short' }, table(['links on', 'to', 'reason', 'URLs skipped', 'pages fetched', 'new texts'],
      D.skipped_classes.map((c) => [el('span', { text: c.source_template || '(seeds)' }), el('span', { text: c.target_template }), c.reason, num(c.skipped), num(c.fetched), num(c.new)]))));
    const dup = document.getElementById('duplicated');
    if (!D.duplicated.length) dup.append(empty('No page copies another.'));
    else dup.append(el('div', { class: 'scroll short' }, table(['page', 'copies'], D.duplicated.map((d) => [el('span', { text: d.url }), num(d.copies)]))));
  }

  // ---- graphs: a force layout on canvas ----
  function graphView(canvas, tip, info, graph, opts) {
    const n = graph.nodes.length;
    canvas.dataset.nodes = String(n);
    canvas.dataset.edges = String(graph.edges.length);
    canvas.dataset.hover = '';
    canvas.dataset.zoom = '1';
    const maxW = Math.max(1, ...graph.nodes.map((x) => x.weight));
    const nodes = graph.nodes.map((x, i) => {
      const a = i * 2.399963; const r = 30 * Math.sqrt(i + 1);
      return { ...x, i, x: r * Math.cos(a), y: r * Math.sin(a), vx: 0, vy: 0, fixed: false,
        r: 3 + 15 * Math.sqrt(x.weight / maxW), c: opts.colour(x) };
    });
    const maxE = Math.max(1, ...graph.edges.map((e) => e.w));
    const edges = graph.edges.filter((e) => e.s < n && e.t < n && e.s !== e.t);
    const nbrs = nodes.map(() => new Set());
    for (const e of edges) { nbrs[e.s].add(e.t); nbrs[e.t].add(e.s); }
    let view = { x: 0, y: 0, k: 1 };
    let alpha = 1; let hover = -1; let drag = null; let frame = 0;
    const ctx = canvas.getContext('2d');
    function size() {
      const dpr = window.devicePixelRatio || 1;
      const w = canvas.clientWidth || 800; const h = canvas.clientHeight || 560;
      if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
        canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
      }
      return { w, h, dpr };
    }
    function tick() {
      // Repulsion between every pair (n is bounded), springs along edges, a pull to the centre.
      for (let a = 0; a < n; a++) {
        const p = nodes[a];
        for (let b = a + 1; b < n; b++) {
          const q = nodes[b];
          let dx = p.x - q.x; let dy = p.y - q.y; let d2 = dx * dx + dy * dy;
          if (d2 < 0.01) { dx = Math.random() - 0.5; dy = Math.random() - 0.5; d2 = 0.5; }
          const f = Math.min(40, 900 / d2) * alpha;
          const d = Math.sqrt(d2);
          p.vx += dx / d * f; p.vy += dy / d * f; q.vx -= dx / d * f; q.vy -= dy / d * f;
        }
      }
      for (const e of edges) {
        const p = nodes[e.s]; const q = nodes[e.t];
        const dx = q.x - p.x; const dy = q.y - p.y; const d = Math.sqrt(dx * dx + dy * dy) || 1;
        const want = 40 + p.r + q.r;
        const f = (d - want) * 0.02 * (0.3 + 0.7 * Math.sqrt(e.w / maxE)) * alpha;
        p.vx += dx / d * f; p.vy += dy / d * f; q.vx -= dx / d * f; q.vy -= dy / d * f;
      }
      for (const p of nodes) {
        p.vx -= p.x * 0.004 * alpha; p.vy -= p.y * 0.004 * alpha;
        if (p.fixed) { p.vx = 0; p.vy = 0; continue; }
        p.vx *= 0.6; p.vy *= 0.6;
        p.x += Math.max(-30, Math.min(30, p.vx)); p.y += Math.max(-30, Math.min(30, p.vy));
      }
      alpha *= 0.985;
    }
    function fit() {
      const { w, h } = size();
      if (!n) return;
      let x0 = Infinity; let y0 = Infinity; let x1 = -Infinity; let y1 = -Infinity;
      for (const p of nodes) { x0 = Math.min(x0, p.x - p.r); y0 = Math.min(y0, p.y - p.r); x1 = Math.max(x1, p.x + p.r); y1 = Math.max(y1, p.y + p.r); }
      const k = Math.min(4, 0.92 * Math.min(w / Math.max(1, x1 - x0), h / Math.max(1, y1 - y0)));
      view = { k, x: w / 2 - k * (x0 + x1) / 2, y: h / 2 - k * (y0 + y1) / 2 };
      canvas.dataset.zoom = k.toFixed(3);
    }
    const toScreen = (p) => ({ x: view.x + view.k * p.x, y: view.y + view.k * p.y });
    const toWorld = (x, y) => ({ x: (x - view.x) / view.k, y: (y - view.y) / view.k });
    function draw() {
      const { w, h, dpr } = size();
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, w, h);
      ctx.save();
      ctx.translate(view.x, view.y); ctx.scale(view.k, view.k);
      for (const e of edges) {
        const p = nodes[e.s]; const q = nodes[e.t];
        const lit = hover >= 0 && (e.s === hover || e.t === hover);
        ctx.strokeStyle = opts.edgeColour(e, lit, hover >= 0);
        ctx.lineWidth = (0.6 + 3 * Math.sqrt(e.w / maxE)) / Math.sqrt(view.k);
        ctx.beginPath(); ctx.moveTo(p.x, p.y); ctx.lineTo(q.x, q.y); ctx.stroke();
      }
      for (const p of nodes) {
        const dim = hover >= 0 && p.i !== hover && !nbrs[hover].has(p.i);
        ctx.globalAlpha = dim ? 0.25 : 1;
        ctx.fillStyle = p.c;
        ctx.beginPath(); ctx.arc(p.x, p.y, p.r, 0, 2 * Math.PI); ctx.fill();
        ctx.lineWidth = 1 / view.k; ctx.strokeStyle = '#fff'; ctx.stroke();
      }
      ctx.globalAlpha = 1;
      ctx.fillStyle = '#1d2330';
      ctx.font = (11 / view.k) + 'px system-ui, sans-serif';
      for (const p of nodes) {
        if (n <= 60 || p.i === hover || (hover >= 0 && nbrs[hover].has(p.i)) || p.r * view.k > 9) {
          ctx.fillText(p.label, p.x + p.r + 2 / view.k, p.y + 4 / view.k);
        }
      }
      ctx.restore();
    }
    function loop() {
      frame = 0;
      for (let s = 0; s < 3 && alpha > 0.02; s++) tick();
      if (alpha > 0.02 && !userMoved) fit();
      draw();
      if (alpha > 0.02 || drag) frame = requestAnimationFrame(loop);
      else canvas.dataset.settled = '1';
    }
    function kick(a) { alpha = Math.max(alpha, a); if (!frame) frame = requestAnimationFrame(loop); }
    function nodeAt(x, y) {
      const w = toWorld(x, y);
      let best = -1; let bestD = Infinity;
      for (const p of nodes) {
        const d = Math.hypot(p.x - w.x, p.y - w.y);
        if (d <= p.r + 3 / view.k && d < bestD) { best = p.i; bestD = d; }
      }
      return best;
    }
    function local(ev) { const r = canvas.getBoundingClientRect(); return { x: ev.clientX - r.left, y: ev.clientY - r.top }; }
    let userMoved = false;
    function setHover(i, at) {
      hover = i;
      canvas.dataset.hover = i >= 0 ? nodes[i].label : '';
      if (i < 0) { tip.style.display = 'none'; } else {
        tip.replaceChildren(el('b', { text: nodes[i].label }), nodes[i].detail);
        tip.style.display = 'block';
        tip.style.left = Math.min(at.x + 14, canvas.clientWidth - 200) + 'px';
        tip.style.top = (at.y + 12) + 'px';
      }
      draw();
    }
    canvas.addEventListener('pointerdown', (ev) => {
      const at = local(ev);
      const i = nodeAt(at.x, at.y);
      drag = { i, x: at.x, y: at.y, vx: view.x, vy: view.y };
      if (i >= 0) nodes[i].fixed = true;
      canvas.setPointerCapture(ev.pointerId);
      canvas.classList.add('dragging');
    });
    canvas.addEventListener('pointermove', (ev) => {
      const at = local(ev);
      if (drag) {
        userMoved = true;
        if (drag.i >= 0) {
          const w = toWorld(at.x, at.y);
          nodes[drag.i].x = w.x; nodes[drag.i].y = w.y;
          kick(0.3);
        } else {
          view.x = drag.vx + at.x - drag.x; view.y = drag.vy + at.y - drag.y;
          draw();
        }
        return;
      }
      const i = nodeAt(at.x, at.y);
      if (i !== hover) setHover(i, at);
      else if (i >= 0) { tip.style.left = Math.min(at.x + 14, canvas.clientWidth - 200) + 'px'; tip.style.top = (at.y + 12) + 'px'; }
    });
    const release = () => { drag = null; canvas.classList.remove('dragging'); };
    canvas.addEventListener('pointerup', release);
    canvas.addEventListener('pointercancel', release);
    canvas.addEventListener('pointerleave', () => { if (!drag) setHover(-1, null); });
    canvas.addEventListener('dblclick', (ev) => {
      const at = local(ev); const i = nodeAt(at.x, at.y);
      if (i >= 0) { nodes[i].fixed = false; kick(0.3); }
    });
    canvas.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      userMoved = true;
      const at = local(ev);
      const f = Math.exp(-ev.deltaY * 0.0015);
      const k = Math.max(0.05, Math.min(20, view.k * f));
      view.x = at.x - (at.x - view.x) * k / view.k; view.y = at.y - (at.y - view.y) * k / view.k; view.k = k;
      canvas.dataset.zoom = k.toFixed(3);
      draw();
    }, { passive: false });
    info.textContent = opts.info;
    window.addEventListener('resize', () => { fit(); draw(); });
    // What a page script or a test can ask of the view.
    canvas.graphView = {
      nodeCount: () => n,
      screenOf: (i) => toScreen(nodes[i]),
      label: (i) => nodes[i].label,
      fit: () => { userMoved = false; fit(); draw(); },
    };
    kick(1);
    return canvas.graphView;
  }

  function linkGraph() {
    const g = D.link_graph;
    const canvas = document.getElementById('link-graph');
    const info = document.getElementById('link-graph-info');
    if (!g.nodes.length) { info.textContent = 'No links.'; canvas.dataset.nodes = '0'; return; }
    const view = graphView(canvas, document.getElementById('link-graph-tip'), info, g, {
      colour: (x) => hashColour(x.group),
      edgeColour: (e, lit, any) => lit ? 'rgba(47,111,219,.85)' : any ? 'rgba(120,130,150,.08)' : 'rgba(120,130,150,.28)',
      info: num(g.nodes.length) + ' of ' + num(g.all_nodes) + ' hosts (most pages and links in), ' + num(g.edges.length) +
        ' of ' + num(g.all_edges) + ' host-to-host links (heaviest); circle area: pages; colour: registrable domain.',
    });
    document.getElementById('link-graph-fit').addEventListener('click', view.fit);
  }

  // ---- entities ----
  function entities() {
    const box = document.getElementById('entities-body');
    const E = D.entities;
    if (!E) {
      box.append(empty('This crawl ran without --entities: it has no entities dataset, so there are no entities to show.'));
      return;
    }
    box.append(el('p', { class: 'note', text: num(E.mentions) + ' mentions of ' + num(E.entities) + ' entities on ' + num(E.pages) + ' pages; ' + num(E.relations) + ' relations.' }));
    const types = Object.entries(E.types).sort((a, b) => b[1] - a[1]);
    const typeBox = el('div', { class: 'chart', 'data-chart': 'entity-types' });
    box.append(el('h3', { text: 'Mentions by type' }), typeBox);
    const W = 900; const rowH = 22; const max = Math.max(1, ...types.map((t) => t[1]));
    const g = svg('g');
    types.forEach(([t, c], i) => {
      g.append(svg('text', { x: 150, y: i * rowH + 15, 'text-anchor': 'end', text: t }));
      g.append(titled(svg('rect', { x: 158, y: i * rowH + 4, width: Math.max(2, (W - 260) * c / max), height: rowH - 8, fill: hashColour(t) }), t + ': ' + num(c)));
      g.append(svg('text', { x: 164 + Math.max(2, (W - 260) * c / max), y: i * rowH + 15, text: num(c) }));
    });
    typeBox.append(svg('svg', { viewBox: '0 0 ' + W + ' ' + Math.max(rowH, types.length * rowH), role: 'img' }, g));
    box.append(el('h3', { text: 'Top entities' }), el('div', { class: 'scroll' }, table(['entity', 'id', 'type', 'mentions', 'pages', 'mean score'],
      E.top.map((e) => [e.name, e.id, e.kind || '-', num(e.mentions), num(e.pages), e.score.toFixed(2)]), { id: 'entity-table' })));
    if (E.top_relations.length) {
      box.append(el('h3', { text: 'Relations found most often' }), el('div', { class: 'scroll' }, table(['subject', 'predicate', 'object', 'count'],
        E.top_relations.map((r) => [r.subject, r.predicate, r.object, num(r.count)]))));
    }
    box.append(el('h3', { text: 'Entity graph' }));
    const bar = el('div', { class: 'graph-bar' }, el('span', { id: 'entity-graph-info' }), el('button', { type: 'button', id: 'entity-graph-fit', text: 'Fit' }),
      el('span', { text: 'Relations in blue (labelled on hover), co-mentions on a page in grey.' }));
    const canvas = el('canvas', { id: 'entity-graph', 'data-chart': 'entity-graph' });
    const tip = el('div', { class: 'tip' });
    box.append(bar, el('div', { class: 'graph-box' }, canvas, tip));
    const G = E.graph;
    if (!G.nodes.length) { canvas.dataset.nodes = '0'; return; }
    const view = graphView(canvas, tip, document.getElementById('entity-graph-info'), G, {
      colour: (x) => hashColour(x.group),
      edgeColour: (e, lit, any) => e.kind === 'relation'
        ? (lit ? 'rgba(47,111,219,.95)' : any ? 'rgba(47,111,219,.12)' : 'rgba(47,111,219,.55)')
        : (lit ? 'rgba(90,100,120,.7)' : any ? 'rgba(120,130,150,.06)' : 'rgba(120,130,150,.22)'),
      info: num(G.nodes.length) + ' of ' + num(G.all_nodes) + ' entities, ' + num(G.edges.length) + ' of ' + num(G.all_edges) + ' edges; circle area: mentions; colour: type.',
    });
    document.getElementById('entity-graph-fit').addEventListener('click', view.fit);
  }

  // ---- trends ----
  function lineChart(title, nights, get, fmt) {
    const W = 560; const H = 200; const left = 56; const bottom = 42; const top = 10; const right = 12;
    const vals = nights.map(get);
    const max = Math.max(1e-9, ...vals);
    const x = (i) => nights.length === 1 ? (left + W - right) / 2 : left + (W - left - right) * i / (nights.length - 1);
    const y = (v) => top + (H - top - bottom) * (1 - v / max);
    const g = svg('g');
    for (let i = 0; i <= 4; i++) {
      const yy = top + (H - top - bottom) * i / 4;
      g.append(svg('line', { x1: left, x2: W - right, y1: yy, y2: yy, class: 'grid-line' }));
      g.append(svg('text', { x: left - 6, y: yy + 4, 'text-anchor': 'end', text: fmt(max * (1 - i / 4)) }));
    }
    g.append(svg('path', { d: vals.map((v, i) => (i ? 'L' : 'M') + x(i).toFixed(1) + ' ' + y(v).toFixed(1)).join(' '), fill: 'none', stroke: '#2f6fdb', 'stroke-width': 2 }));
    vals.forEach((v, i) => {
      g.append(titled(svg('circle', { cx: x(i), cy: y(v), r: 3.5, fill: '#2f6fdb' }), nights[i].label + ': ' + fmt(v)));
      if (i % Math.ceil(nights.length / 6) === 0) g.append(svg('text', { x: x(i), y: H - bottom + 16, 'text-anchor': 'middle', text: nights[i].label }));
    });
    g.append(svg('line', { x1: left, x2: W - right, y1: H - bottom, y2: H - bottom, class: 'axis' }));
    return el('div', {}, el('h3', { text: title }), el('div', { class: 'chart', 'data-chart': 'trend' }, svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' }, g)));
  }
  function trends() {
    const box = document.getElementById('trends-body');
    const N = D.history;
    if (!N.length) {
      box.append(empty('No history given: pass earlier nights\u2019 `layercrawl run --json` summaries with --history FILE_OR_DIR (jobs/nightly.sh keeps them in data/history).'));
      return;
    }
    const grid = el('div', { class: 'grid', id: 'trend-charts' });
    const round = (v) => num(Math.round(v));
    grid.append(
      lineChart('Pages per second', N, (n) => n.pages_per_second, (v) => v.toFixed(v < 10 ? 1 : 0)),
      lineChart('Pages fetched', N, (n) => n.fetched, round),
      lineChart('Errors', N, (n) => n.errors, round),
      lineChart('New URLs found', N, (n) => n.new_urls, round));
    box.append(el('p', { class: 'note', text: N.length + (N.length === 1 ? ' night' : ' nights') + ', from their run summaries (--history).' }), grid);
    box.append(table(['night', 'fetched', 'ok', 'errors', 'new URLs', 'pages/s', 'seconds', 'summary'],
      N.map((n) => [n.label, num(n.fetched), num(n.ok), num(n.errors), num(n.new_urls), n.pages_per_second.toFixed(1), n.seconds.toFixed(0), n.file])));
  }

  overview();
  funnel();
  statuses();
  hosts();
  histogram('latency-chart', 'latency-note', D.latency, ms);
  histogram('size-chart', 'size-note', D.sizes, bytes);
  noise();
  linkGraph();
  entities();
  trends();
  document.body.dataset.ready = '1';
}());
