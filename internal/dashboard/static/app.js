// codecell's dashboard. It reads the REST API under /api/v1 and renders it.
// Everything the API returns is untrusted (code and output come from the
// sandbox): it reaches the page only as text (textContent, text nodes,
// attribute values), never as markup.
'use strict';

(function () {
  const TOKEN_KEY = 'codecell.token';
  const REFRESH_MS = 5000;
  const PAGE = 50;          // executions per request
  const CHART_MAX = 100;    // executions drawn in the latency chart
  const CHART_PAD = { l: 52, r: 10, t: 10, b: 22 };
  const BAR_MAX = 24;       // px: a few executions make narrow bars, not slabs
  const TOOL_LIMIT = 25;
  const DEBOUNCE_MS = 250;

  const state = {
    token: null,
    needToken: false,
    execs: new Map(),       // id -> execution
    nextBefore: null,       // the id to page on from the oldest page loaded
    olderLoaded: false,     // whether "Load older" has been used
    renderedKey: '',        // the ids last rendered, to re-render only on change
    stats: null,
    gen: 0,                 // bumped by resetData: answers to older requests are dropped
    upstreamKey: '',
    bars: [],               // the executions drawn, oldest first, for hovering
    refreshing: false,
    refreshAgain: false,    // a refresh was asked for while one ran
    toolSeq: 0,
    toolTimer: 0,
  };

  const $ = (id) => document.getElementById(id);

  // el builds an element. attrs are set as attributes (values are only ever
  // text), children as nodes; strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function show(container, ...nodes) {
    container.replaceChildren(...nodes);
  }

  function note(text, cls) {
    return el('p', { class: cls || 'muted' }, text);
  }

  // Tokens.

  function loadToken() {
    try {
      state.token = sessionStorage.getItem(TOKEN_KEY);
    } catch (e) {
      state.token = null; // storage disabled: the token lives in memory only
    }
    $('forget').hidden = !state.token;
  }

  function saveToken(t) {
    t = t || null;
    // Another token may be another namespace: forget what the old one showed.
    if (t !== state.token) resetData();
    state.token = t;
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* kept in memory */ }
    $('forget').hidden = !state.token;
  }

  // resetData drops the executions and statistics held for the page.
  function resetData() {
    state.gen++;
    state.execs = new Map();
    state.nextBefore = null;
    state.olderLoaded = false;
    state.renderedKey = '';
    state.stats = null;
  }

  // takeTokenFromFragment adopts #token=... and removes it from the address
  // bar (and so from the history). Fragments never reach the server. The
  // value is percent-decoded only ('+' stays '+', as tokens may hold it).
  function takeTokenFromFragment() {
    const parts = location.hash.replace(/^#/, '').split('&');
    const i = parts.findIndex((p) => p.startsWith('token='));
    if (i < 0) return false;
    let t = parts[i].slice('token='.length);
    try { t = decodeURIComponent(t); } catch (e) { /* kept as written */ }
    t = t.trim();
    parts.splice(i, 1);
    const rest = parts.filter(Boolean).join('&');
    history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
    if (!t) return false;
    saveToken(t);
    return true;
  }

  function needToken() {
    if (state.needToken) return;
    state.needToken = true;
    resetData();
    $('token-message').textContent = state.token
      ? 'The server did not accept the token. Enter another one.'
      : 'This server needs a bearer token.';
    $('token-panel').hidden = false;
    $('token-input').focus();
  }

  function tokenAccepted() {
    state.needToken = false;
    $('token-panel').hidden = true;
    refreshAll();
    searchTools();
  }

  // The API.

  class AuthError extends Error {}

  async function api(path, params) {
    const url = new URL(path, location.origin);
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== '' && v !== null && v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers = { Accept: 'application/json' };
    if (state.token) headers.Authorization = 'Bearer ' + state.token;
    const resp = await fetch(url, { headers, cache: 'no-store', credentials: 'omit' });
    if (resp.status === 401) {
      needToken();
      throw new AuthError('needs a token');
    }
    if (!resp.ok) {
      let detail = '';
      try { detail = (await resp.text()).trim().slice(0, 300); } catch (e) { /* none */ }
      throw new Error(resp.status + ' ' + resp.statusText + (detail ? ': ' + detail : ''));
    }
    return resp.json();
  }

  // failed renders a panel's error, or the need for a token.
  function failed(container, err) {
    if (err instanceof AuthError) show(container, note('Needs a token.'));
    else show(container, note('Could not load: ' + err.message, 'error'));
  }

  // Formatting.

  function fmtTime(s) {
    const d = new Date(s);
    if (!s || isNaN(d)) return s ? String(s) : '';
    const p = (n) => String(n).padStart(2, '0');
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' +
      p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
  }

  function fmtMS(ms) {
    ms = Number(ms) || 0;
    if (ms >= 10000) return (ms / 1000).toFixed(0) + ' s';
    if (ms >= 1000) return (ms / 1000).toFixed(1) + ' s';
    return Math.round(ms) + ' ms';
  }

  function fmtBytes(n) {
    n = Number(n) || 0;
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MB';
    if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + ' KB';
    return n + ' B';
  }

  function asText(v) {
    if (v === undefined || v === null) return '';
    return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  }

  function firstLine(s, max) {
    const line = asText(s).split('\n').find((l) => l.trim() !== '') || '';
    return line.length > max ? line.slice(0, max - 1) + '…' : line;
  }

  // preview is s on one line, white space collapsed: the first line of a
  // printed list or of JSON is often only "[" or "{".
  function preview(s, max) {
    const line = asText(s).replace(/\s+/g, ' ').trim();
    return line.length > max ? line.slice(0, max - 1) + '…' : line;
  }

  // errorText is an execution's error as Python shows it: the traceback
  // (which ends in the type and message), then the message when the
  // traceback does not hold it (a hint codecell added, or an error without
  // a traceback, such as a timeout).
  function errorText(e) {
    const msg = e.error_type + (e.error_message ? ': ' + e.error_message : '');
    const tb = e.error_traceback || '';
    if (!tb) return msg;
    return tb.includes(e.error_message || '') ? tb : tb.replace(/\n*$/, '\n') + msg;
  }

  const byIdDesc = (a, b) => compareIds(b.id, a.id);
  function compareIds(a, b) {
    const na = Number(a), nb = Number(b);
    if (!isNaN(na) && !isNaN(nb)) return na - nb;
    return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
  }

  // Overview.

  async function loadStats() {
    const gen = state.gen;
    try {
      const stats = await api('/api/v1/stats');
      if (gen !== state.gen) return;
      state.stats = stats;
      renderStats(stats);
    } catch (err) {
      failed($('stats'), err);
    }
  }

  function card(label, value, detail) {
    return el('div', { class: 'card' },
      el('div', { class: 'label' }, label),
      el('div', { class: 'value' }, value),
      detail ? el('div', { class: 'detail muted' }, detail) : null);
  }

  function renderStats(s) {
    const errors = Object.entries(s.errors_by_type || {})
      .sort((a, b) => b[1] - a[1]).map(([t, n]) => t + ' ' + n).join(', ');
    const lat = s.latency_ms || {};
    const tc = s.tool_calls || {};
    const top = (tc.top || []).slice(0, 3).map((t) => t.name + ' ' + t.count).join(', ');
    const cs = s.context_savings || {};
    const cards = [
      card('Executions', String(s.total ?? 0), (s.ok ?? 0) + ' ok'),
      card('Failed', String(s.failed ?? 0), errors || 'no errors'),
      card('Latency p50 / p95 / p99', [lat.p50, lat.p95, lat.p99].every((v) => (v || 0) < 1000)
        ? (lat.p50 || 0) + ' / ' + (lat.p95 || 0) + ' / ' + (lat.p99 || 0) + ' ms'
        : fmtMS(lat.p50) + ' / ' + fmtMS(lat.p95) + ' / ' + fmtMS(lat.p99)),
      card('Tool calls', String(tc.count ?? 0), (tc.errors ?? 0) + ' failed' + (top ? ' · ' + top : '')),
      card('Kept out of context', fmtBytes(cs.tool_result_bytes), fmtBytes(cs.returned_bytes) + ' returned'),
    ];
    if (s.pool) {
      cards.push(card('Warm pool', s.pool.idle + ' idle', s.pool.busy + ' busy · ' +
        s.pool.starting + ' starting · ' + s.pool.size + ' per workspace'));
    }
    show($('stats'), ...cards);
    if (s.isolation) setIsolation(s.isolation);
  }

  function setIsolation(level) {
    const b = $('isolation');
    b.textContent = 'isolation: ' + level;
    b.className = 'badge isolation-' + (level === 'development' ? 'weak' : 'strong');
  }

  // Upstream servers.

  async function loadUpstreams() {
    let list;
    try {
      list = (await api('/api/v1/upstreams')).upstreams || [];
    } catch (err) {
      failed($('upstreams'), err);
      return;
    }
    renderUpstreams(list);
  }

  function stateClass(s) {
    return { connected: 'ok', starting: 'warn', failed: 'bad' }[s] || 'muted';
  }

  function renderUpstreams(list) {
    list = list.slice().sort((a, b) => (a.name < b.name ? -1 : 1));
    const connected = list.filter((u) => u.state === 'connected').length;
    const sum = $('upstream-summary');
    sum.textContent = list.length ? 'upstreams: ' + connected + '/' + list.length + ' connected' : 'no upstreams';
    sum.className = 'badge ' + (connected === list.length ? 'ok' : 'warn');
    if (!list.length) {
      show($('upstreams'), note('No upstream servers configured.'));
    } else {
      show($('upstreams'), el('table', null,
        el('thead', null, el('tr', null, el('th', null, 'Server'), el('th', null, 'State'), el('th', { class: 'num' }, 'Tools'))),
        el('tbody', null, ...list.map((u) => el('tr', null,
          el('td', null, el('code', null, u.name)),
          el('td', null, el('span', { class: 'state ' + stateClass(u.state) }, u.state),
            u.error ? el('div', { class: 'error small' }, u.error) : null),
          el('td', { class: 'num' }, String(u.tool_count ?? 0)))))));
    }
    // The server filter of the tool search.
    const sel = $('tool-server');
    const chosen = sel.value;
    sel.replaceChildren(el('option', { value: '' }, 'all servers'),
      ...list.map((u) => el('option', { value: u.name }, u.name)));
    sel.value = list.some((u) => u.name === chosen) ? chosen : '';
    // Tools come and go with their servers: search again when they change.
    const key = list.map((u) => u.name + ':' + u.state + ':' + u.tool_count).join(',');
    if (state.upstreamKey && key !== state.upstreamKey) searchTools();
    state.upstreamKey = key;
  }

  // Tasks: executions that outlived their calls.

  async function loadTasks() {
    let list;
    try {
      list = (await api('/api/v1/tasks')).tasks || [];
    } catch (err) {
      failed($('tasks'), err);
      return;
    }
    if (!list.length) {
      show($('tasks'), note('No tasks. An execution becomes one when the host takes tasks and the run is long.'));
      return;
    }
    const cls = { working: 'warn', input_required: 'warn', completed: 'ok', failed: 'bad', cancelled: 'muted' };
    show($('tasks'), el('table', null,
      el('thead', null, el('tr', null, el('th', null, 'Task'), el('th', null, 'State'), el('th', null, 'Updated'))),
      el('tbody', null, ...list.map((k) => el('tr', null,
        el('td', null, el('code', { title: k.id }, k.tool), el('div', { class: 'muted small' }, k.id.slice(0, 8) + (k.replica ? ' · ' + k.replica : ''))),
        el('td', null, el('span', { class: 'state ' + (cls[k.status] || 'muted') }, k.status),
          k.status_message ? el('div', { class: 'small' }, firstLine(k.status_message, 120)) : null),
        el('td', null, el('time', { class: 'muted', datetime: k.updated_at }, fmtTime(k.updated_at))))))));
  }

  // Executions.

  async function loadExecutions() {
    const gen = state.gen;
    try {
      const out = await api('/api/v1/executions', { limit: PAGE });
      if (gen !== state.gen) return;
      const page = out.executions || [];
      const newest = sortedExecs()[0];
      const oldest = page[page.length - 1];
      // Keep the older pages loaded unless more executions came in than a
      // page holds, which would leave a gap between them.
      const gap = newest && oldest && out.next_before != null && compareIds(oldest.id, newest.id) > 0;
      if (!state.olderLoaded || gap) {
        state.execs = new Map();
        state.olderLoaded = false;
        state.nextBefore = out.next_before ?? null;
      }
      merge(page);
      renderExecutions();
    } catch (err) {
      failed($('executions'), err);
      state.renderedKey = '';
    }
  }

  async function loadOlder() {
    if (state.nextBefore === null) return;
    $('more').disabled = true;
    $('more-error').hidden = true;
    const gen = state.gen;
    try {
      const out = await api('/api/v1/executions', { limit: PAGE, before: state.nextBefore });
      if (gen !== state.gen) return;
      merge(out.executions || []);
      state.nextBefore = out.next_before ?? null;
      state.olderLoaded = true;
      renderExecutions();
      drawLatency();
    } catch (err) {
      if (!(err instanceof AuthError)) {
        $('more-error').textContent = 'Could not load older executions: ' + err.message;
        $('more-error').hidden = false;
      }
    } finally {
      $('more').disabled = false;
    }
  }

  function merge(list) {
    for (const e of list) state.execs.set(String(e.id), e);
  }

  function sortedExecs() {
    return Array.from(state.execs.values()).sort(byIdDesc);
  }

  function renderExecutions() {
    const list = sortedExecs();
    $('more').hidden = state.nextBefore === null;
    // Executions do not change once logged: re-render only when the list
    // does, so that what a reader has open (or selected) stays put.
    const key = list.map((e) => e.id).join(',');
    if (key === state.renderedKey) return;
    state.renderedKey = key;
    if (!list.length) {
      show($('executions'), note('No executions yet.'));
      return;
    }
    const open = new Set(Array.from(document.querySelectorAll('details.exec[open]'), (d) => d.dataset.id));
    show($('executions'), ...list.map((e) => renderExecution(e, open.has(String(e.id)))));
  }

  function block(label, text, cls) {
    if (text === '' || text === undefined || text === null) return null;
    return el('div', { class: 'block' }, el('div', { class: 'label' }, label),
      el('pre', { class: cls || '' }, asText(text)));
  }

  function renderExecution(e, open) {
    const bad = !!e.error_type;
    const outcome = bad
      ? el('span', { class: 'outcome error' }, firstLine(e.error_type + (e.error_message ? ': ' + e.error_message : ''), 120))
      : el('span', { class: 'outcome' }, preview(e.stdout || asText(e.result) || e.stderr, 120));
    const summary = el('summary', null,
      el('span', { class: 'status ' + (bad ? 'bad' : 'ok'), title: bad ? 'failed' : 'ok' }, bad ? '✗' : '✓'),
      el('span', { class: 'id muted' }, '#' + e.id),
      el('time', { class: 'muted', datetime: e.created_at }, fmtTime(e.created_at)),
      el('code', { class: 'preview' }, firstLine(e.code, 80)),
      outcome,
      el('span', { class: 'dur muted' }, fmtMS(e.duration_ms)));
    const calls = e.tool_calls || [];
    const net = e.network || [];
    const meta = [e.isolation ? 'isolation ' + e.isolation : '', e.session_id ? 'session ' + e.session_id : '']
      .filter(Boolean).join(' · ');
    const body = el('div', { class: 'body' },
      block('Code', e.code, 'code'),
      block('Stdout', e.stdout),
      block('Stderr', e.stderr),
      block('Result', e.result),
      bad ? block('Error', errorText(e), 'error') : null,
      calls.length ? el('div', { class: 'block' }, el('div', { class: 'label' }, 'Tool calls'),
        el('table', null, el('tbody', null, ...calls.map((c) => el('tr', null,
          el('td', null, el('code', null, c.name)),
          el('td', null, el('span', { class: 'state ' + (c.ok ? 'ok' : 'bad') }, c.ok ? 'ok' : 'failed')),
          el('td', { class: 'muted' }, c.approval ? 'approval: ' + c.approval : ''),
          el('td', { class: 'num' }, fmtMS(c.duration_ms))))))) : null,
      net.length ? el('div', { class: 'block' }, el('div', { class: 'label' }, 'Network'),
        el('table', null, el('tbody', null, ...net.map((f) => el('tr', null,
          el('td', null, el('code', null, f.host + ':' + f.port)),
          el('td', null, el('span', { class: 'state ' + (f.refused ? 'bad' : 'ok') }, f.refused ? 'refused' : 'allowed')),
          el('td', { class: 'muted' }, f.refused || ''),
          el('td', { class: 'num' }, f.connections + ' conn'),
          el('td', { class: 'num' }, fmtBytes(f.sent) + ' out, ' + fmtBytes(f.received) + ' in')))))) : null,
      meta ? note(meta) : null);
    return el('details', { class: 'exec ' + (bad ? 'failed' : 'ok'), 'data-id': e.id, open }, summary, body);
  }

  // The latency chart: one bar per execution, oldest on the left, drawn on
  // a canvas (no chart library: the page works offline).

  // axis returns a round top for values up to v and its tick step: 1, 2
  // or 5 times a power of ten, in 4 or 5 steps.
  function axis(v) {
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(v, 1))));
    for (const m of [1, 2, 5, 10]) {
      if (m * p >= v) return { top: m * p, step: (m === 2 ? 0.5 : m === 5 ? 1 : m === 10 ? 2 : 0.2) * p };
    }
    return { top: 10 * p, step: 2 * p };
  }

  function drawLatency() {
    const c = $('latency');
    const css = getComputedStyle(document.documentElement);
    const color = (name) => css.getPropertyValue(name).trim();
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 600, h = 180;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.font = '11px system-ui, sans-serif';
    const list = sortedExecs().slice(0, CHART_MAX).reverse();
    state.bars = list;
    const lat = (state.stats && state.stats.latency_ms) || {};
    $('latency-caption').textContent = list.length
      ? '· last ' + list.length + ' execution' + (list.length === 1 ? '' : 's') : '';
    c.setAttribute('aria-label', 'Execution latency of the last ' + list.length + ' executions' +
      (lat.p50 !== undefined ? ', p50 ' + fmtMS(lat.p50) + ', p95 ' + fmtMS(lat.p95) : ''));
    const pad = CHART_PAD;
    const pw = w - pad.l - pad.r, ph = h - pad.t - pad.b;
    if (!list.length) {
      g.fillStyle = color('--muted');
      g.fillText('No executions yet.', pad.l, pad.t + ph / 2);
      return;
    }
    const { top, step } = axis(Math.max(1, lat.p95 || 0, ...list.map((e) => Number(e.duration_ms) || 0)));
    const y = (ms) => pad.t + ph - (ms / top) * ph;
    // Grid and labels.
    g.strokeStyle = color('--grid');
    g.fillStyle = color('--muted');
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (let v = 0; v <= top + step / 2; v += step) {
      const yy = Math.round(y(v)) + 0.5;
      g.beginPath(); g.moveTo(pad.l, yy); g.lineTo(pad.l + pw, yy); g.stroke();
      g.fillText(fmtMS(v), pad.l - 6, yy);
    }
    // Bars.
    const bw = Math.min(BAR_MAX, pw / list.length);
    const gap = bw > 4 ? 1 : 0;
    list.forEach((e, i) => {
      const ms = Number(e.duration_ms) || 0;
      const top_ = y(ms);
      g.fillStyle = e.error_type ? color('--bad') : color('--ok');
      g.fillRect(pad.l + i * bw + gap, Math.min(top_, pad.t + ph - 2), Math.max(1, bw - 2 * gap), Math.max(2, pad.t + ph - top_));
    });
    // The log's p95, when known.
    if (lat.p95) {
      const yy = Math.round(y(lat.p95)) + 0.5;
      g.strokeStyle = color('--p95');
      g.setLineDash([4, 3]);
      g.beginPath(); g.moveTo(pad.l, yy); g.lineTo(pad.l + pw, yy); g.stroke();
      g.setLineDash([]);
    }
    // First and last ids under the axis.
    g.fillStyle = color('--muted');
    g.textBaseline = 'top';
    g.textAlign = 'left';
    g.fillText('#' + list[0].id, pad.l, pad.t + ph + 6);
    g.textAlign = 'right';
    if (list.length > 1) g.fillText('#' + list[list.length - 1].id, pad.l + list.length * bw, pad.t + ph + 6);
  }

  function barAt(ev) {
    const c = $('latency');
    const x = ev.clientX - c.getBoundingClientRect().left;
    const bw = Math.min(BAR_MAX, (c.clientWidth - CHART_PAD.l - CHART_PAD.r) / state.bars.length);
    const i = Math.floor((x - CHART_PAD.l) / bw);
    return i >= 0 && i < state.bars.length ? state.bars[i] : null;
  }

  function hoverLatency(ev) {
    const e = barAt(ev);
    ev.target.title = e ? '#' + e.id + ' · ' + fmtMS(e.duration_ms) + ' · ' + (e.error_type || 'ok') : '';
    ev.target.style.cursor = e ? 'pointer' : 'default';
  }

  function clickLatency(ev) {
    const e = barAt(ev);
    if (!e) return;
    const d = Array.from(document.querySelectorAll('details.exec')).find((x) => x.dataset.id === String(e.id));
    if (d) {
      d.open = true;
      d.scrollIntoView({ block: 'center' });
    }
  }

  // Tools.

  function scheduleToolSearch() {
    clearTimeout(state.toolTimer);
    state.toolTimer = setTimeout(searchTools, DEBOUNCE_MS);
  }

  async function searchTools() {
    clearTimeout(state.toolTimer);
    const seq = ++state.toolSeq;
    const query = $('tool-query').value.trim();
    let out;
    try {
      out = await api('/api/v1/tools/search',
        { query, detail_level: 'summary', server: $('tool-server').value, limit: TOOL_LIMIT });
    } catch (err) {
      if (seq === state.toolSeq) {
        $('tools-count').textContent = '';
        failed($('tools'), err);
      }
      return;
    }
    if (seq !== state.toolSeq) return; // a newer search has been sent
    const tools = out.tools || [];
    const total = out.total ?? tools.length;
    $('tools-count').textContent = !tools.length
      ? (query ? 'No tools match.' : 'No tools.')
      : (total > tools.length ? tools.length + ' of ' + total + ' tools' : total + ' tool' + (total === 1 ? '' : 's'));
    show($('tools'), ...tools.map((t) => el('li', { class: 'tool' },
      el('div', null, el('code', { class: 'name' }, t.name),
        t.allowed === false ? el('span', { class: 'state bad' }, 'denied by policy') : null),
      t.signature ? el('code', { class: 'sig' }, t.signature) : null,
      (t.summary || t.description) ? el('p', null, t.summary || t.description) : null)));
  }

  // Skills.

  async function loadSkills() {
    let list;
    const gen = state.gen;
    try {
      list = (await api('/api/v1/skills')).skills || [];
    } catch (err) {
      failed($('skills'), err);
      return;
    }
    if (gen !== state.gen) return;
    if (!list.length) {
      show($('skills'), note('No skills saved.'));
      return;
    }
    show($('skills'), el('table', null,
      el('thead', null, el('tr', null, el('th', null, 'Skill'), el('th', null, 'Description'), el('th', null, 'Saved'))),
      el('tbody', null, ...list.map((s) => el('tr', null,
        el('td', null, el('code', null, s.name), ' ', el('span', { class: 'muted' }, 'v' + s.version)),
        el('td', null, s.description || '', ...(s.tags || []).map((t) => el('span', { class: 'tag' }, t))),
        el('td', { class: 'muted nowrap' }, fmtTime(s.created_at)))))));
  }

  // Refreshing.

  async function refreshAll() {
    if (state.refreshing) {
      state.refreshAgain = true;
      return;
    }
    state.refreshing = true;
    try {
      await Promise.allSettled([loadStats(), loadUpstreams(), loadExecutions(), loadSkills(), loadTasks()]);
      if (!state.stats) {
        // Without stats, the newest execution still tells the isolation.
        const newest = sortedExecs()[0];
        if (newest && newest.isolation) setIsolation(newest.isolation);
      }
      drawLatency();
      if (!state.needToken) $('updated').textContent = 'updated ' + fmtTime(new Date().toISOString()).slice(11);
    } finally {
      state.refreshing = false;
    }
    if (state.refreshAgain) {
      state.refreshAgain = false;
      refreshAll();
    }
  }

  function start() {
    loadToken();
    takeTokenFromFragment();
    $('token-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = $('token-input').value.trim();
      if (!t) return;
      $('token-input').value = '';
      saveToken(t);
      tokenAccepted();
    });
    $('forget').addEventListener('click', () => {
      saveToken(null);
      refreshAll();
    });
    $('refresh').addEventListener('click', () => { refreshAll(); searchTools(); });
    $('more').addEventListener('click', loadOlder);
    $('tool-query').addEventListener('input', scheduleToolSearch);
    $('tool-server').addEventListener('change', searchTools);
    $('latency').addEventListener('mousemove', hoverLatency);
    $('latency').addEventListener('click', clickLatency);
    window.addEventListener('hashchange', () => { if (takeTokenFromFragment()) tokenAccepted(); });
    let resizeTimer = 0;
    window.addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(drawLatency, 100); });
    setInterval(() => {
      if (!document.hidden && !state.needToken) refreshAll();
    }, REFRESH_MS);
    refreshAll();
    searchTools();
  }

  start();
})();
