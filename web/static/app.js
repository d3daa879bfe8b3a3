// ncpos dashboard: renders the snapshot embedded in the page, then polls
// /api/v1/status every second. No libraries, nothing from the internet;
// every value is put into the page as text (never as HTML), because
// reasons and event messages come from people.
'use strict';

const POLL_MS = 1000;
const CHART_POINTS = 120;
const hist = {}; // port name -> [{t, rx_bps, tx_bps, …}]
let last = null;
let lastOK = 0;
let polled = 0; // successful polls of /api/v1/status since the page loaded

function h(tag, attrs, ...kids) {
  const svg = ['svg', 'polyline', 'text', 'line'].includes(tag);
  const e = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.setAttribute('class', v);
    else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
const $ = (id) => document.getElementById(id);

function si(v, unit) {
  if (v === undefined || v === null || isNaN(v)) return '—';
  const steps = [[1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [d, p] of steps) {
    if (Math.abs(v) >= d) return (v / d).toFixed(v / d >= 100 ? 0 : v / d >= 10 ? 1 : 2) + ' ' + p + unit;
  }
  return (Number.isInteger(v) ? v : v.toFixed(v >= 10 ? 0 : 1)) + ' ' + unit;
}
const pps = (v) => si(v, 'pps');
const bits = (v) => si(v, 'bit/s');
function bytes(n) {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}
function dur(s) {
  s = Math.max(0, Math.floor(s));
  const d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60), ss = s % 60;
  if (d) return `${d}d ${hh}h ${m}m`;
  if (hh) return `${hh}h ${m}m`;
  if (m) return `${m}m ${ss}s`;
  return `${ss}s`;
}
function utc(t) {
  if (!t || t.startsWith('0001')) return '';
  return t.replace('T', ' ').replace(/\.\d+/, '').replace('Z', '');
}
function ago(t, now) {
  if (!t || t.startsWith('0001')) return '';
  return dur((Date.parse(now) - Date.parse(t)) / 1000) + ' ago';
}
function num(v, text, field) {
  return h('td', { class: 'num', 'data-field': field, 'data-value': v }, text);
}

function mergeHistory(ports) {
  for (const p of ports) {
    const have = hist[p.name] || (hist[p.name] = []);
    const lastT = have.length ? have[have.length - 1].t : 0;
    for (const pt of p.history || []) if (pt.t > lastT) have.push(pt);
    if (have.length > CHART_POINTS) have.splice(0, have.length - CHART_POINTS);
  }
}

function chart(points) {
  const W = 240, H = 44, pad = 2;
  const svg = h('svg', { class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img' });
  if (!points.length) {
    svg.append(h('text', { x: 6, y: 26 }, 'collecting…'));
    return svg;
  }
  const top = Math.max(...points.map((p) => Math.max(p.rx_bps, p.tx_bps)));
  const max = Math.max(1, top);
  const x = (i) => W - pad - (points.length - 1 - i) * ((W - 2 * pad) / (CHART_POINTS - 1));
  const y = (v) => H - pad - (v / max) * (H - 2 * pad - 10);
  // receive as a filled area, transmit as a line on top: both stay
  // visible when a segment passes everything it receives.
  const rx = points.map((p, i) => `${x(i).toFixed(1)},${y(p.rx_bps).toFixed(1)}`);
  rx.push(`${x(points.length - 1).toFixed(1)},${H - pad}`, `${x(0).toFixed(1)},${H - pad}`);
  svg.append(h('polyline', { class: 'rx', points: rx.join(' ') }));
  svg.append(h('polyline', { class: 'tx', points: points.map((p, i) => `${x(i).toFixed(1)},${y(p.tx_bps).toFixed(1)}`).join(' ') }));
  svg.append(h('text', { x: 4, y: 9 }, top > 0 ? 'max ' + bits(top) : 'no traffic'));
  svg.setAttribute('aria-label', 'bit rate, max ' + bits(max));
  return svg;
}

function renderHeader(s) {
  const sys = s.system;
  const st = $('state');
  st.textContent = { ok: 'OK', bypass: 'BYPASS', degraded: 'DEGRADED' }[s.summary.state] || s.summary.state;
  st.className = 'badge ' + s.summary.state;
  st.dataset.state = s.summary.state;
  $('hostname').textContent = sys.hostname;
  $('build').textContent = sys.build_id;
  $('kernel').textContent = (sys.kernel.split(' ')[2] || sys.kernel);
  $('uptime').textContent = dur(sys.uptime_seconds);
  const p = sys.watchdog.petter;
  $('last-reset').textContent = p && p.last_reset ? p.last_reset.text : 'unknown (watchdogd not reporting)';
  const ul = $('problems');
  ul.replaceChildren(...(s.summary.problems || []).map((t) => h('li', {}, t)));
  ul.hidden = !(s.summary.problems || []).length;
  document.title = `ncpos ${sys.hostname} — ${st.textContent}`;
}

function renderSegments(s) {
  const cards = (s.segments || []).map((g) => {
    const b = g.bypass;
    const state = b ? b.state : 'unknown';
    const dl = h('dl', {});
    const row = (k, v, field) => dl.append(h('dt', {}, k), h('dd', { 'data-field': field }, v));
    row('Ports', g.ports.join(' ⇄ '), 'ports');
    row('Mode / engine', `${g.mode} / ${g.engine}`, 'mode');
    row('Cores', g.cores && g.cores.length ? 'CPU ' + g.cores.join(', ') : (g.cores_configured ? g.cores_configured + ' configured' : 'all but one (configured)'), 'cores');
    if (b) {
      row('Bypass reason', b.reason || '—', 'bypass-reason');
      row('Since', b.since ? `${utc(b.since)} (${ago(b.since, s.time)})` : '—', 'bypass-since');
      if (b.override) row('Override', `${b.override.state} by ${b.override.by || '?'}` + (b.override.update ? ' (ncpos update, for its reboots)' : '') + `: ${b.override.reason}` + (b.override.expires ? `, until ${utc(b.override.expires)} UTC` : ''), 'override');
      if (b.desired && b.desired !== b.state) row('Wanted', b.desired, 'desired');
      if (b.problem) row('Relay problem', h('span', { class: 'bad' }, b.problem), 'relay-problem');
    } else {
      row('Bypass', g.bypass_note || 'unknown', 'bypass-note');
    }
    const f = g.forwarding;
    if (f) {
      row('Forwarder', f.healthy ? h('span', { class: 'good' }, 'healthy') : h('span', { class: 'bad' }, f.problem || 'unhealthy'), 'forwarder');
      row('Frames in / out', `${f.packets.toLocaleString()} / ${f.forwarded.toLocaleString()}`, 'frames');
      row('Drops / malformed', `${f.drops.toLocaleString()} / ${f.malformed.toLocaleString()}`, 'drops');
    } else {
      row('Forwarder', h('span', { class: 'muted' }, g.forwarder_note || 'unknown'), 'forwarder');
    }
    const stText = { normal: 'forwarding', bypass: 'BYPASS', disconnect: 'DISCONNECTED', unknown: 'bypass state unknown' }[state] || state;
    return h('div', { class: 'card ' + state, 'data-segment': g.name },
      h('h3', {}, h('span', {}, g.name, g.bypass_pair ? h('small', { class: 'muted' }, ` relay ${g.bypass_pair}`) : ''),
        h('span', { class: 'state ' + (state === 'normal' ? 'good' : state === 'unknown' ? 'muted' : 'warn'), 'data-field': 'bypass-state', 'data-value': state }, stText)),
      dl);
  });
  $('segments').replaceChildren(...(cards.length ? cards : [h('p', { class: 'muted' }, 'No segments configured.')]));
}

function renderPorts(s) {
  const rows = s.ports.map((p) => {
    const r = p.rates, c = p.counters;
    const link = h('td', { 'data-field': 'link', 'data-value': p.link },
      h('span', { class: 'dot ' + (p.up ? 'up' : 'down') }), p.link,
      p.speed_mbps > 0 ? ` · ${p.speed_mbps >= 1000 ? p.speed_mbps / 1000 + ' Gbit/s' : p.speed_mbps + ' Mbit/s'}` : '',
      p.duplex && p.duplex !== 'full' ? ` ${p.duplex}` : '');
    if (p.link_since) link.title = 'since ' + utc(p.link_since);
    return h('tr', { 'data-port': p.name },
      h('td', {}, h('b', { 'data-field': 'name' }, p.name), h('br'), h('small', { class: 'muted' }, `${p.interface} ${p.mac}`)),
      h('td', { 'data-field': 'role' }, p.role === 'data' ? `${p.segment}` : p.role),
      link, neighbourCell(p.lldp),
      num(r.rx_pps, pps(r.rx_pps), 'rx_pps'), num(r.tx_pps, pps(r.tx_pps), 'tx_pps'),
      num(r.rx_bps, bits(r.rx_bps), 'rx_bps'), num(r.tx_bps, bits(r.tx_bps), 'tx_bps'),
      h('td', { class: 'num' + (r.drops_ps > 0 ? ' bad' : ''), 'data-field': 'drops_ps', 'data-value': r.drops_ps }, si(r.drops_ps, '/s')),
      num(c.rx_dropped + c.tx_dropped, (c.rx_dropped + c.tx_dropped).toLocaleString(), 'drops_total'),
      num(c.rx_errors + c.tx_errors, (c.rx_errors + c.tx_errors).toLocaleString(), 'errors_total'),
      h('td', {}, chart(hist[p.name] || [])));
  });
  $('ports').tBodies[0].replaceChildren(...rows);
}

// neighbourCell shows who a segment port's LLDP frames say is at the other
// end of its cable.
function neighbourCell(l) {
  const td = h('td', { 'data-field': 'lldp' });
  if (!l) return td;
  for (const n of l.neighbors) {
    const line = h('div', {}, h('b', {}, n.system_name || n.chassis_id), ` port ${n.port_id}`);
    line.title = [`chassis ${n.chassis_id}`, n.port_description && `port: ${n.port_description}`, n.system_description,
      n.management_address && `management ${n.management_address}`, `last seen ${utc(n.last_seen)}, until ${utc(n.expires)}`].filter(Boolean).join('\n');
    td.append(line);
  }
  if (!l.neighbors.length) td.append(h('span', { class: 'muted' }, '—'));
  if (l.rejected) td.append(h('br'), h('small', { class: 'bad', title: l.last_error || '' }, `${l.rejected} unreadable`));
  if (l.dropped) td.append(h('br'), h('small', { class: 'bad', title: 'new neighbours the full table left out' }, `${l.dropped} dropped`));
  return td;
}

function kv(table, rows) {
  table.replaceChildren(...rows.filter(Boolean).map(([k, v, field, cls]) =>
    h('tr', {}, h('th', {}, k), h('td', { 'data-field': field, class: cls }, v))));
}

function renderWatchdog(s) {
  const w = s.system.watchdog, p = w.petter;
  const holders = (w.holders || []).map((x) => `${x.name} (pid ${x.pid})`).join(', ') || 'nobody';
  if (!p) {
    kv($('watchdog'), [['watchdogd', w.error || 'not reporting', 'wd-error', 'bad'], ['Held by', holders, 'wd-holders']]);
    return;
  }
  const left = p.time_left_seconds >= 0 ? `${p.time_left_seconds} s` : 'driver cannot tell';
  kv($('watchdog'), [
    ['Device', `${p.identity} (${p.device})`, 'wd-identity'],
    ['Timeout', `${p.timeout_seconds} s`, 'wd-timeout'],
    ['Time left', left, 'wd-timeleft'],
    ['Petting', p.petting ? `yes, every ${p.interval_seconds} s${p.in_grace ? ' (boot grace)' : ''}` : 'STOPPED: ' + p.stopped_reason, 'wd-petting', p.petting ? 'good' : 'bad'],
    ['Last reset', p.last_reset.text, 'wd-last-reset', p.last_reset.kind === 'watchdog' ? 'bad' : ''],
    ['Held by', holders, 'wd-holders'],
    ['Checks', (p.checks || []).map((c) => c.ok ? `${c.name} ✓` : `${c.name} ✗ ${c.error || ''}`).join('; ') || '—', 'wd-checks'],
  ]);
}

function renderHardware(s) {
  const hw = s.hardware;
  if (!hw) {
    kv($('hardware'), [['Probe', 'not run yet: bypassd probes at its first start in a boot', 'hw-none']]);
    return;
  }
  const hex = (n) => '0x' + n.toString(16).padStart(2, '0');
  const nics = (hw.nics || []).filter((n) => n.bypass).map((n) => `${n.pci} ${n.id}: ${n.bypass} (${n.support.replace('_', ' ')})`);
  const sio = (hw.superio || []).map((x) => `${x.chip || 'unknown chip ' + hex(x.id)} at ${hex(x.port)}`);
  const smbus = (hw.smbus || []).map((b) => `i2c-${b.bus} ${b.name}: ` + ((b.answers || []).map((a) => hex(a.address)).join(' ') || 'nothing answers'));
  const fits = (hw.fits || []).filter((f) => f.found).map((f) => `${f.profile} ${f.pair} (${f.backend}, ${f.support.replace('_', ' ')}): ${f.why}`);
  kv($('hardware'), [
    ['Bypass NICs', nics.join('; ') || 'none', 'hw-nics'],
    ['Super I/O', sio.join('; ') || 'none', 'hw-superio'],
    ['SMBus', smbus.join('; ') || 'none', 'hw-smbus'],
    ['Watchdogs', (hw.watchdogs || []).map((w) => `${w.identity} (${w.device})`).join('; ') || 'none', 'hw-watchdogs'],
    ['Profiles that fit', fits.join('; ') || 'none of the compiled-in profiles', 'hw-fits'],
    ['Could not look at', (hw.errors || []).join('; ') || '—', 'hw-errors'],
  ]);
}

// clockRow says whether the box's clock is synced, with which server
// and by how much, or why not.
function clockRow(t) {
  if (!t || !(t.servers || []).length) return ['Clock', 'not synced: no NTP servers configured ([time] servers)', 'clock', 'muted'];
  if (!t.synced) {
    const since = t.last_sync ? `; last synced ${utc(t.last_sync)} UTC with ${t.server}` : '';
    return ['Clock', `NOT synced: ${t.error || 'no answer yet'}${since}`, 'clock', 'bad'];
  }
  const ms = (x) => `${(x * 1000).toFixed(1)} ms`;
  const step = t.step_seconds ? `; stepped by ${dur(Math.abs(t.step_seconds))} at ${utc(t.first_sync)} UTC` : '';
  return ['Clock', `synced with ${t.server} (stratum ${t.stratum}), offset ${ms(t.offset_seconds)} at ${utc(t.last_sync)} UTC${step}`, 'clock'];
}

function renderSystem(s) {
  const sys = s.system, host = s.host, m = host.memory;
  kv($('system'), [
    ['Uptime', dur(sys.uptime_seconds) + (host.boot_time ? ` (booted ${utc(host.boot_time)} UTC)` : ''), 'uptime'],
    ['Load (1/5/15 min)', host.load.map((x) => x.toFixed(2)).join(' / '), 'load'],
    ['Memory', m.total_bytes ? `${bytes(m.total_bytes - m.available_bytes)} of ${bytes(m.total_bytes)} used (${m.used_percent}%)` : '—', 'memory'],
    ['Root', `${sys.root.fs_type} ${/(^|,)ro(,|$)/.test(sys.root.options) ? 'read-only' : 'WRITABLE'}`, 'root'],
    ['Boot disk writes', sys.boot_disk ? `${bytes(sys.boot_disk.bytes_written)} since boot` : '—', 'disk'],
    ['Configuration', sys.config_source + ((sys.config_rejected || []).length ? ' (a file was rejected)' : ''), 'config', (sys.config_rejected || []).length ? 'bad' : ''],
    clockRow(sys.time),
  ]);
  $('cpus').replaceChildren(...(host.cpus || []).map((c) => {
    const bar = h('div', { class: 'bar' + (c.busy_percent > 90 ? ' hot' : ''), 'data-cpu': c.cpu, 'data-value': c.busy_percent },
      h('span', {}), h('label', {}, `CPU ${c.cpu}: ${c.busy_percent.toFixed(1)} %`));
    bar.firstChild.style.width = Math.min(100, c.busy_percent) + '%';
    return bar;
  }));
  const sensors = host.sensors || [];
  $('sensors').replaceChildren(...(sensors.length
    ? [h('tr', {}, h('th', {}, 'Sensor'), h('th', { class: 'num' }, 'Value'))].concat(sensors.map((x) =>
      h('tr', {}, h('td', {}, `${x.chip} ${x.label}`),
        h('td', { class: 'num' + (x.crit && x.value >= x.crit - 5 ? ' bad' : ''), 'data-field': 'sensor', 'data-value': x.value },
          `${x.kind === 'fan' ? x.value.toFixed(0) : x.value.toFixed(1)} ${x.unit}`))))
    : [h('tr', {}, h('td', { class: 'muted' }, 'No temperature or fan sensors (hwmon) on this machine.'))]));
}

function renderDaemons(s) {
  $('daemons').replaceChildren(...s.system.daemons.map((d) => {
    const cls = d.state === 'healthy' ? 'good' : d.state === 'not configured' ? 'muted' : 'bad';
    return h('tr', { 'data-daemon': d.name }, h('td', {}, d.name),
      h('td', { class: cls, 'data-field': 'state' }, d.state), h('td', { class: 'muted' }, d.reason || ''));
  }));
  const t = s.self_test;
  if (!t) {
    $('selftest').replaceChildren(h('p', { class: 'muted', 'data-field': 'selftest' }, 'No self-test has run yet.'));
    return;
  }
  const tbl = h('table', { class: 'grid small' }, h('tr', {}, h('th', {}, 'Segment'), h('th', {}, 'Frame'), h('th', { class: 'num' }, 'Throughput'),
    h('th', { class: 'num' }, 'Expected'), h('th', {}, 'Verdict'), h('th', { class: 'num' }, 'Loss'), h('th', { class: 'num' }, 'Latency')));
  for (const r of t.results || []) {
    const verdict = r.verdict || '—';
    tbl.append(h('tr', { 'data-segment': r.segment || '', 'data-size': r.frame_size },
      h('td', { title: r.direction || '' }, r.segment || '—', r.direction ? h('span', { class: 'muted' }, ` ${r.direction}`) : ''),
      h('td', {}, `${r.frame_size} B`), h('td', { class: 'num' }, `${pps(r.throughput_pps)} · ${si(r.throughput_mbps * 1e6, 'bit/s')}`),
      h('td', { class: 'num', title: r.expected || '' }, r.expected_pps ? pps(r.expected_pps) : '—'),
      h('td', { class: verdict === 'PASSED' ? 'good' : 'bad', 'data-field': 'verdict', title: r.note || '' }, verdict),
      h('td', { class: 'num' }, `${r.loss_percent} %`), latencyCell(r)));
  }
  $('selftest').replaceChildren(
    h('p', {}, h('span', { class: t.passed ? 'good' : 'bad', 'data-field': 'selftest' }, t.passed ? 'PASSED' : 'FAILED'), ` ${utc(t.finished)} UTC — ${t.summary}`),
    throughputChart(t.results || []), tbl);
}

// latencyCell shows RFC 2544's latency (§26.2, the average over its
// trials) with min / mean / p99 / max over every frame in its title.
function latencyCell(r) {
  if (!r.latency_us) return h('td', { class: 'num' }, '—');
  const rfc = r.latency_rfc2544_us || r.latency_us;
  const title = r.latency_trials
    ? `RFC 2544 §26.2: average of ${r.latency_trials} trials at the throughput rate; every frame: min ${r.latency_min_us} / mean ${r.latency_us} / p99 ${r.latency_p99_us} / max ${r.latency_max_us} µs`
    : `mean of every frame: ${r.latency_us} µs`;
  return h('td', { class: 'num', title, 'data-field': 'latency' }, `${rfc} µs`);
}

// throughputChart draws throughput (bit/s) against frame size, the
// seed articles' chart, as inline SVG.
function throughputChart(results) {
  const W = 320, H = 120, L = 4, B = 16;
  const svg = h('svg', { class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'data-field': 'selftest-chart' });
  if (!results.length) return svg;
  const sizes = [...new Set(results.map(r => r.frame_size))].sort((a, b) => a - b);
  const max = Math.max(...results.map(r => r.throughput_mbps), 1);
  const x = size => { const i = sizes.indexOf(size); return L + (sizes.length === 1 ? (W - 2 * L) / 2 : i * (W - 2 * L) / (sizes.length - 1)); };
  const y = v => (H - B) - v / max * (H - B - 12);
  // One line per segment and direction.
  const lines = new Map();
  for (const r of results) {
    const k = (r.segment || '') + ' ' + (r.direction || '');
    if (!lines.has(k)) lines.set(k, []);
    lines.get(k).push(r);
  }
  let n = 0;
  for (const [k, rs] of lines) {
    svg.append(h('polyline', { class: n++ % 2 ? 'tx' : 'rx', 'data-line': k.trim(), points: rs.map(r => `${x(r.frame_size).toFixed(1)},${y(r.throughput_mbps).toFixed(1)}`).join(' ') }));
  }
  sizes.forEach(size => svg.append(h('text', { x: Math.min(Math.max(x(size) - 8, 0), W - 28), y: H - 3 }, `${size}`)));
  svg.append(h('text', { x: 4, y: 10 }, 'throughput vs frame size, max ' + si(max * 1e6, 'bit/s')));
  svg.setAttribute('aria-label', 'self-test throughput against frame size, one line per segment');
  return svg;
}

function renderEvents(s) {
  const rows = (s.events || []).map((e) => h('tr', { 'data-seq': e.seq },
    h('td', {}, utc(e.time)), h('td', { class: 'sev-' + e.severity }, e.severity), h('td', {}, e.kind), h('td', { 'data-field': 'message' }, e.message)));
  $('events').tBodies[0].replaceChildren(...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'Nothing has happened since statusd started.'))]));
}

// renderLogs shows the chosen daemon's recent lines (GET /api/v1/logs).
let lastLogs = [];
function renderLogs(daemons) {
  lastLogs = daemons;
  const sel = $('logs-daemon');
  const names = daemons.map((d) => d.daemon);
  if (sel.dataset.names !== names.join(',')) {
    const keep = sel.value;
    sel.replaceChildren(...names.map((n) => h('option', {}, n)));
    sel.dataset.names = names.join(',');
    if (names.includes(keep)) sel.value = keep;
  }
  const d = daemons.find((x) => x.daemon === sel.value) || daemons[0];
  if (!d) {
    $('logs').textContent = 'No daemon has logged since statusd started.';
    return;
  }
  $('logs-note').textContent = `; ${d.daemon}: ${d.total} lines since statusd started` + (d.missed ? `, ${d.missed} lost before reaching it` : '');
  $('logs').textContent = d.lines.map((l) => utc(l.time) + '  ' + l.text).join('\n');
}

async function pollLogs() {
  try {
    const r = await fetch('/api/v1/logs?limit=40', { cache: 'no-store', credentials: 'same-origin' });
    if (r.ok) renderLogs((await r.json()).daemons);
  } catch (e) {
    // The status poll says when the box is not answering.
  }
  setTimeout(pollLogs, 5 * POLL_MS);
}

function renderControl(s) {
  fillSelect($('c-segment'), (s.segments || []).map((g) => g.name));
  fillSelect($('p-port'), (s.ports || []).filter((p) => p.role === 'data').map((p) => p.name));
  const c = s.control;
  const notes = [];
  if (c.bypass !== 'available') notes.push('bypass override: ' + c.bypass);
  if (c.reboot !== 'available') notes.push('reboot: ' + c.reboot);
  if (c.password_source) notes.unshift(`password: ${c.password_source.startsWith('/') ? 'this box\'s own (' + c.password_source + ')' : c.password_source}`);
  $('control-note').textContent = notes.join('; ');
  const t = c.tls;
  $('tls-key').textContent = t
    ? `HTTPS key of this box: ${t.fingerprint} (${t.kept ? 'kept on /perm' : t.note}). Host commands pin it on first contact; compare it with what they print.`
    : 'Served without TLS.';
}

function render(s) {
  last = s;
  mergeHistory(s.ports);
  renderHeader(s);
  renderSegments(s);
  renderPorts(s);
  renderWatchdog(s);
  renderHardware(s);
  renderSystem(s);
  renderDaemons(s);
  renderEvents(s);
  renderControl(s);
  $('live').textContent = 'data of ' + utc(s.time) + ' UTC';
  $('live').dataset.time = s.time;
}

async function poll() {
  try {
    const r = await fetch('/api/v1/status?history=10', { cache: 'no-store', credentials: 'same-origin' });
    if (!r.ok) throw new Error(r.status + ' ' + r.statusText);
    render(await r.json());
    lastOK = Date.now();
    polled++;
    $('live').classList.remove('stale');
  } catch (e) {
    if (Date.now() - lastOK > 5 * POLL_MS) {
      $('live').textContent = 'NOT UPDATING: ' + e.message;
      $('live').classList.add('stale');
    }
  }
  setTimeout(poll, POLL_MS);
}

// fillSelect sets a select's options to names, keeping the choice when
// the names did not change.
function fillSelect(sel, names) {
  if (sel.dataset.names !== names.join(',')) {
    sel.replaceChildren(...names.map((n) => h('option', {}, n)));
    sel.dataset.names = names.join(',');
  }
}

// Capture: stream POST /api/v1/capture until the capture ends, Stop or
// the page's limit, then hand the browser what arrived, trimmed to whole
// pcapng blocks, as a download.
const CAPTURE_LIMIT = 512 * 1024 * 1024; // bytes the page holds at most
const capture = { reader: null, stopped: false };
async function captureStart() {
  const out = $('p-status');
  if (!$('c-password').value) {
    // Without it the box answers 401, and the browser would ask for it
    // in a dialog of its own.
    out.textContent = 'a capture takes the control password: enter it under Credentials';
    out.className = 'bad';
    return;
  }
  const q = new URLSearchParams({ port: $('p-port').value, direction: $('p-direction').value, seconds: $('p-seconds').value });
  if ($('p-filter').value.trim()) q.set('filter', $('p-filter').value.trim());
  $('p-start').disabled = true; // one capture at a time from this page
  out.className = '';
  out.textContent = 'starting…';
  try {
    await captureRun(q, out);
  } finally {
    capture.reader = null;
    $('p-start').disabled = false;
    $('p-stop').disabled = true;
  }
}

async function captureRun(q, out) {
  let r;
  try {
    r = await fetch('/api/v1/capture?' + q, { method: 'POST', headers: authHeaders(), cache: 'no-store', credentials: 'same-origin' });
  } catch (e) { out.textContent = 'failed: ' + e.message; out.className = 'bad'; return; }
  if (!r.ok) {
    const j = await r.json().catch(() => ({}));
    out.textContent = `refused (${r.status}): ${j.error || r.statusText}`;
    out.className = 'bad';
    return;
  }
  const name = (/filename="([^"]+)"/.exec(r.headers.get('Content-Disposition') || '') || [])[1] || 'capture.pcapng';
  const chunks = [];
  let size = 0, why = '';
  capture.reader = r.body.getReader();
  capture.stopped = false;
  $('p-stop').disabled = false;
  try {
    for (;;) {
      const { done, value } = await capture.reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
      out.textContent = `capturing ${q.get('port')}: ${size.toLocaleString()} bytes`;
      if (size >= CAPTURE_LIMIT) {
        why = ` (stopped at the page's limit of ${CAPTURE_LIMIT / 1048576} MiB)`;
        await capture.reader.cancel();
        break;
      }
    }
  } catch (e) {
    if (!capture.stopped) why = ` (cut short: ${e.message})`;
  }
  const data = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) { data.set(c, at); at += c.length; }
  const whole = wholeBlocks(data);
  const a = h('a', { href: URL.createObjectURL(new Blob([data.subarray(0, whole)], { type: 'application/x-pcapng' })), download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  out.textContent = `downloaded ${name} (${whole.toLocaleString()} bytes)${why}`;
  out.className = why.startsWith(' (cut') ? 'bad' : 'good';
}

// wholeBlocks is how many of a pcapng stream's first bytes are whole
// blocks (the box writes little-endian sections): a capture stopped
// mid-block keeps the frames before it.
function wholeBlocks(b) {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let off = 0;
  while (off + 12 <= b.length) {
    const len = v.getUint32(off + 4, true);
    if (len < 12 || off + len > b.length) break;
    off += len;
  }
  return off;
}

function authHeaders() {
  const pw = $('c-password').value;
  const headers = { 'Content-Type': 'application/json' };
  if (pw) headers.Authorization = 'Basic ' + btoa(unescape(encodeURIComponent($('c-user').value + ':' + pw)));
  return headers;
}

// Install to internal disk: list the disks (needs the password), start,
// then follow the job until it ends.
async function installInfo() {
  const out = $('i-status');
  try {
    const r = await fetch('/api/v1/install', { headers: authHeaders(), credentials: 'same-origin' });
    const j = await r.json().catch(() => ({}));
    if (!r.ok) { out.textContent = `refused (${r.status}): ${j.error || r.statusText}`; out.className = 'bad'; return null; }
    return j;
  } catch (e) { out.textContent = 'failed: ' + e.message; out.className = 'bad'; return null; }
}

function showJob(job) {
  const out = $('i-status');
  if (!job || job.state === 'idle') { out.textContent = ''; return; }
  const pct = job.total_bytes ? Math.floor(100 * job.done_bytes / job.total_bytes) : 0;
  out.textContent = job.state === 'running' ? `${job.phase || 'starting'} ${job.target}: ${pct} %`
    : job.state === 'done' ? `installed onto ${job.target}: ${job.result}` : `install onto ${job.target} failed: ${job.error}`;
  out.className = job.state === 'failed' ? 'bad' : job.state === 'done' ? 'good' : '';
  if (job.state === 'running') setTimeout(async () => { const j = await installInfo(); if (j) showJob(j.job); }, 2000);
}

// Self-test: start a run between the configured test ports, then follow
// the job; the report panel shows the result once the run has written it.
async function selfTestJob() {
  const out = $('s-status');
  try {
    const r = await fetch('/api/v1/selftest/job', { headers: authHeaders(), cache: 'no-store', credentials: 'same-origin' });
    const j = await r.json().catch(() => ({}));
    if (!r.ok) { out.textContent = `unavailable (${r.status}): ${j.error || r.statusText}`; out.className = 'bad'; return null; }
    return j;
  } catch (e) { out.textContent = 'failed: ' + e.message; out.className = 'bad'; return null; }
}

function showSelfTest(j) {
  const out = $('s-status');
  const job = j.job;
  if (!job || job.state === 'idle') { out.textContent = j.unavailable || ''; out.className = j.unavailable ? 'muted' : ''; return; }
  out.textContent = job.state === 'running'
    ? (job.size ? `running: ${job.size} B frames (${job.done_sizes + 1} of ${job.total_sizes})` : 'running…')
    : job.state === 'done' ? `finished ${utc(job.finished)} UTC: ${job.result}` : `failed: ${job.error}`;
  out.className = job.state === 'failed' ? 'bad' : job.state === 'done' ? 'good' : '';
  if (job.state === 'running') setTimeout(async () => { const n = await selfTestJob(); if (n) showSelfTest(n); }, 2000);
}

async function post(path, body) {
  const out = $('c-result');
  const headers = authHeaders();
  out.className = '';
  out.textContent = 'sending…';
  try {
    const r = await fetch(path, { method: 'POST', headers, body: JSON.stringify(body), credentials: 'same-origin' });
    const j = await r.json().catch(() => ({}));
    out.textContent = r.ok ? 'done: ' + (j.status || j.state || 'ok') : `refused (${r.status}): ${j.error || r.statusText}`;
    out.className = r.ok ? 'good' : 'bad';
  } catch (e) {
    out.textContent = 'failed: ' + e.message;
    out.className = 'bad';
  }
}

// Configuration: load, check, plan and apply a candidate, confirm or
// revert the change that waits, and the history. Every request carries
// the control password of the form below.
const cfg = { version: 0, pending: null, timer: null };

async function cfgCall(method, path, body) {
  const init = { method, headers: authHeaders(), credentials: 'same-origin', cache: 'no-store' };
  if (body) init.body = JSON.stringify(body);
  try {
    const r = await fetch(path, init);
    return { ok: r.ok, status: r.status, j: await r.json().catch(() => ({})) };
  } catch (e) {
    return { ok: false, status: 0, j: { error: e.message } };
  }
}

function cfgShow(text, cls) {
  $('cfg-out').textContent = text;
  $('cfg-out').className = cls || '';
}

function cfgProblems(j) {
  return (j.errors || []).map((e) => e.message).join('\n');
}

// cfgInForce reads the configuration in force and names it above the
// editor; it returns the answer, or null when refused.
async function cfgInForce() {
  const r = await cfgCall('GET', '/api/v1/config');
  if (!r.ok) { cfgShow(`refused (${r.status}): ${r.j.error || ''}`, 'bad'); return null; }
  cfg.version = r.j.version;
  $('cfg-inforce').textContent = r.j.version ? `in force: version ${r.j.version}, applied by ${r.j.by} from ${r.j.from}` : `in force: as booted from ${r.j.source}`;
  return r.j;
}

async function cfgLoad() {
  const cur = await cfgInForce();
  if (!cur) return;
  $('cfg-text').value = cur.text;
  cfgShow('');
  await cfgHistory();
}

async function cfgCheck() {
  const r = await cfgCall('POST', '/api/v1/config/check', { text: $('cfg-text').value });
  if (!r.ok) return cfgShow(`refused (${r.status}): ${r.j.error || ''}`, 'bad');
  if (r.j.valid) cfgShow('the box takes this configuration', 'good');
  else cfgShow(cfgProblems(r.j), 'bad');
}

async function cfgPlan() {
  const r = await cfgCall('POST', '/api/v1/config/plan', { text: $('cfg-text').value });
  if (r.status === 422) { cfgShow(cfgProblems(r.j), 'bad'); return null; }
  if (!r.ok) { cfgShow(`refused (${r.status}): ${r.j.error || ''}`, 'bad'); return null; }
  cfg.version = r.j.version;
  const lines = r.j.changes.map((c) => `${c.setting}: ${c.effect}` + (c.taker ? ` (${c.taker})` : '') +
    (c.segments ? ` ${c.segments.join(', ')}` : '') + (c.detail ? `: ${c.detail}` : ''));
  cfgShow(lines.length ? `in place of version ${r.j.version}:\n${lines.join('\n')}\n\n${r.j.diff}` : 'no change', '');
  return r.j;
}

async function cfgApply() {
  const plan = await cfgPlan();
  if (!plan || !plan.changes.length) return;
  const within = Number($('cfg-within').value);
  const reboot = plan.disturbs === 'reboot';
  if (!confirm(`Apply ${plan.changes.length} change(s) in place of version ${plan.version}? ` +
    (reboot ? 'Only a reboot takes it: the box reboots into it, its relays in bypass meanwhile. ' : '') +
    (within ? `The box goes back${reboot ? ', by another reboot,' : ''} by itself unless you confirm within ${within / 60} min.` : 'It is confirmed at once.'))) return;
  const r = await cfgCall('POST', '/api/v1/config/apply', { text: $('cfg-text').value, replaces: plan.version, confirm_within: within, comment: $('cfg-comment').value, reboot });
  if (!r.ok) cfgShow(`refused (${r.status}): ${r.j.error || ''}`, 'bad');
  else if (r.j.rebooting) cfgShow(`version ${r.j.version.version} applied (${r.j.version.state}): the box reboots to take it; load this page again once it is back` +
    (r.j.version.state === 'pending' ? ', and confirm it' : ''), 'good');
  else cfgShow(`version ${r.j.version.version} applied (${r.j.version.state})`, 'good');
  await cfgHistory();
}

async function cfgSettle(path) {
  if (!cfg.pending) return;
  const r = await cfgCall('POST', path, { version: cfg.pending.version });
  if (!r.ok) cfgShow(`refused (${r.status}): ${r.j.error || ''}`, 'bad');
  else cfgShow(`version ${r.j.version} ${r.j.state}`, 'good');
  await cfgHistory();
}

async function cfgHistory() {
  const r = await cfgCall('GET', '/api/v1/config/history');
  if (!r.ok) return;
  await cfgInForce();
  const body = $('cfg-history').querySelector('tbody');
  body.textContent = '';
  for (const v of r.j.versions) {
    body.append(h('tr', { 'data-version': v.version },
      h('td', {}, v.version), h('td', { 'data-field': 'state', class: { reverted: 'warn', reverting: 'bad' }[v.state] || '' }, v.state),
      h('td', {}, utc(v.time)), h('td', {}, v.by + (v.from ? ' from ' + v.from : '')),
      h('td', {}, v.comment || ''), h('td', {}, v.reason || '')));
  }
  cfg.pending = r.j.versions.find((v) => v.version === r.j.pending) || null;
  cfgBanner();
}

// cfgBanner shows the change that waits, counting down to its deadline;
// the history is read again when the deadline passes.
function cfgBanner() {
  clearInterval(cfg.timer);
  const p = cfg.pending;
  $('cfg-banner').hidden = !p;
  if (!p) return;
  const tick = () => {
    const left = Math.max(0, Math.round((Date.parse(p.deadline) - Date.now()) / 1000));
    $('cfg-countdown').textContent = `Version ${p.version} waits for its confirmation: the box goes back to version ${p.parent} in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
    if (left === 0) { clearInterval(cfg.timer); setTimeout(cfgHistory, 2000); }
  };
  tick();
  cfg.timer = setInterval(tick, 1000);
}

document.addEventListener('DOMContentLoaded', () => {
  $('cfg-load').addEventListener('click', cfgLoad);
  $('cfg-check').addEventListener('click', cfgCheck);
  $('cfg-plan').addEventListener('click', cfgPlan);
  $('cfg-apply').addEventListener('click', cfgApply);
  $('cfg-confirm').addEventListener('click', () => cfgSettle('/api/v1/config/confirm'));
  $('cfg-revert').addEventListener('click', () => cfgSettle('/api/v1/config/revert'));
  render(JSON.parse($('initial').textContent));
  lastOK = Date.now();
  $('c-apply').addEventListener('click', () => {
    const body = { segment: $('c-segment').value, state: $('c-state').value, reason: $('c-reason').value };
    if ($('c-expires').value) body.expires_in = $('c-expires').value;
    post('/api/v1/control/bypass', body);
  });
  $('c-rotate').addEventListener('click', async () => {
    const pw = $('c-new-password').value;
    if (pw !== $('c-new-password2').value) {
      $('c-result').textContent = 'the two new passwords differ';
      $('c-result').className = 'bad';
      return;
    }
    await post('/api/v1/control/password', { new_password: pw });
    if ($('c-result').className === 'good') {
      $('c-password').value = pw;
      $('c-new-password').value = $('c-new-password2').value = '';
    }
  });
  $('c-reboot').addEventListener('click', () => {
    if (confirm(`Reboot ${last ? last.system.hostname : 'the appliance'} now? Segments with relays go to bypass while it restarts.`)) {
      post('/api/v1/control/reboot', { reason: $('c-reboot-reason').value });
    }
  });
  $('i-find').addEventListener('click', async () => {
    const j = await installInfo();
    if (!j) return;
    const sel = $('i-disk');
    sel.textContent = '';
    for (const d of j.disks) {
      const o = document.createElement('option');
      o.value = d.path;
      o.disabled = !d.eligible;
      o.textContent = `${d.path} ${d.model || ''} ${(d.size_bytes / 1e9).toFixed(1)} GB ${d.transport}` + (d.eligible ? '' : ` (${d.why_not})`);
      sel.appendChild(o);
    }
    $('i-status').textContent = `running from ${j.source}`;
    showJob(j.job);
  });
  $('i-start').addEventListener('click', async () => {
    const dev = $('i-disk').value;
    if (!dev || !confirm(`Overwrite ${dev} with this appliance's system?`)) return;
    await post('/api/v1/control/install', { device: dev, confirm: $('i-confirm').value, wipe_perm: $('i-wipe').checked });
    const j = await installInfo();
    if (j) showJob(j.job);
  });
  $('s-run').addEventListener('click', async () => {
    const text = $('s-sizes').value.trim();
    const body = text ? { sizes: text.split(/[\s,]+/).filter(Boolean).map(Number) } : {};
    if (!confirm('Run the RFC 2544 self-test now? It sends test traffic through the cabled segments for a few minutes.')) return;
    await post('/api/v1/control/selftest', body);
    const j = await selfTestJob();
    if (j) showSelfTest(j);
  });
  $('p-start').addEventListener('click', captureStart);
  $('p-stop').addEventListener('click', () => {
    if (capture.reader) { capture.stopped = true; capture.reader.cancel(); }
  });
  $('logs-daemon').addEventListener('change', () => renderLogs(lastLogs));
  setTimeout(poll, POLL_MS);
  pollLogs();
});

// Signing in and roles: the page asks who the credentials of the form
// are (GET /api/v1/whoami) and hides what that role may not do. Before
// anyone signs in, everything shows, and the box refuses what the
// credentials may not do.
const ROLES = ['viewer', 'operator', 'admin'];
let signedIn = null; // {name, role, method}

function applyRole() {
  const rank = signedIn ? ROLES.indexOf(signedIn.role) : ROLES.length;
  for (const el of document.querySelectorAll('[data-role]')) {
    const need = ROLES.indexOf(el.dataset.role);
    el.hidden = el.id === 'accounts-section' ? !(signedIn && rank >= need) : rank < need;
  }
  $('whoami').textContent = signedIn ? `signed in as ${signedIn.name} (${signedIn.role}, ${signedIn.method})` : '';
  $('whoami').className = signedIn ? 'good' : '';
}

// signIn asks the box who the form's credentials (or, with none, the
// browser's own) are.
async function signIn(quiet) {
  const init = { credentials: 'same-origin', cache: 'no-store' };
  if ($('c-password').value) init.headers = authHeaders();
  try {
    const r = await fetch('/api/v1/whoami', init);
    const j = await r.json().catch(() => ({}));
    if (!r.ok) {
      signedIn = null;
      if (!quiet) { $('whoami').textContent = `refused (${r.status}): ${j.error || r.statusText}`; $('whoami').className = 'bad'; }
      return;
    }
    signedIn = j;
  } catch (e) {
    signedIn = null;
  }
  applyRole();
  if (signedIn && signedIn.role === 'admin') loadAccounts();
}

function acctShow(text, cls) {
  $('a-result').textContent = text;
  $('a-result').className = cls || '';
}

async function acctDo(method, path, body, done) {
  const r = await cfgCall(method, path, body);
  if (!r.ok) { acctShow(`refused (${r.status}): ${r.j.error || ''}`, 'bad'); return null; }
  acctShow(done, 'good');
  await loadAccounts();
  return r.j;
}

const when = (t) => (t && !t.startsWith('0001') ? t.replace('T', ' ').replace(/\..*|Z$/, '') : '—');

async function loadAccounts() {
  const [a, t, au] = await Promise.all([cfgCall('GET', '/api/v1/accounts'), cfgCall('GET', '/api/v1/tokens'), cfgCall('GET', '/api/v1/audit?limit=50')]);
  if (!a.ok) { acctShow(`refused (${a.status}): ${a.j.error || ''}`, 'bad'); return; }
  const names = a.j.accounts.map((x) => x.name);
  fillSelect($('t-account'), names);
  $('accounts').tBodies[0].replaceChildren(...a.j.accounts.map((x) => {
    const role = h('select', { 'aria-label': 'role of ' + x.name }, ...ROLES.map((r) => h('option', { selected: r === x.role }, r)));
    role.addEventListener('change', () => acctDo('POST', '/api/v1/accounts/' + encodeURIComponent(x.name), { role: role.value }, `${x.name} is now ${role.value === 'admin' || role.value === 'operator' ? 'an' : 'a'} ${role.value}`));
    const toggle = h('button', { type: 'button' }, x.disabled ? 'Enable' : 'Disable');
    toggle.addEventListener('click', () => acctDo('POST', '/api/v1/accounts/' + encodeURIComponent(x.name), { disabled: !x.disabled }, `${x.name} ${x.disabled ? 'enabled' : 'disabled'}`));
    const remove = h('button', { type: 'button', class: 'danger' }, 'Remove…');
    remove.addEventListener('click', () => {
      if (confirm(`Remove the account ${x.name} and its tokens?`)) acctDo('DELETE', '/api/v1/accounts/' + encodeURIComponent(x.name), null, `${x.name} removed`);
    });
    return h('tr', { 'data-account': x.name }, h('td', null, x.name), h('td', null, role), h('td', { class: x.disabled ? 'warn' : '' }, x.disabled ? 'disabled' : 'enabled'),
      h('td', null, x.password === 'box' ? "the box's control password" : 'own'), h('td', { class: 'num' }, x.tokens), h('td', null, when(x.created)), h('td', null, toggle, ' ', remove));
  }));
  if (t.ok) {
    $('tokens').tBodies[0].replaceChildren(...t.j.tokens.map((x) => {
      const revoke = h('button', { type: 'button', class: 'danger' }, 'Revoke…');
      revoke.addEventListener('click', () => {
        if (confirm(`Revoke the token ${x.name} of ${x.account}? What uses it stops working at once.`)) acctDo('DELETE', '/api/v1/tokens/' + encodeURIComponent(x.name), null, `token ${x.name} revoked`);
      });
      return h('tr', { 'data-token': x.name }, h('td', null, x.name), h('td', null, x.account), h('td', null, x.role), h('td', null, when(x.created)), h('td', null, when(x.expires)), h('td', null, when(x.last_used)), h('td', null, revoke));
    }));
  }
  if (au.ok) {
    $('audit').tBodies[0].replaceChildren(...au.j.audit.map((x) => h('tr', null, h('td', null, when(x.time)), h('td', null, x.name || '?'),
      h('td', null, x.method + (x.role ? ', ' + x.role : '')), h('td', null, x.from), h('td', null, x.action), h('td', { class: x.result === 'ok' ? '' : 'warn' }, `${x.status} ${x.result}`))));
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('c-signin').addEventListener('click', () => signIn(false));
  // With auth_read the browser has signed in already to see the page.
  const initial = JSON.parse($('initial').textContent);
  if (initial.control && initial.control.auth_read) signIn(true);
  $('a-add').addEventListener('click', async () => {
    const ok = await acctDo('POST', '/api/v1/accounts', { name: $('a-name').value, role: $('a-role').value, password: $('a-password').value }, `${$('a-name').value} added`);
    if (ok) $('a-name').value = $('a-password').value = '';
  });
  $('t-create').addEventListener('click', async () => {
    const j = await acctDo('POST', '/api/v1/tokens', { account: $('t-account').value, name: $('t-name').value, role: $('t-role').value, expires_in: $('t-expires').value }, `token ${$('t-name').value} created`);
    if (!j) return;
    $('t-secret').hidden = false;
    $('t-secret').textContent = `The token's secret, shown this once (send it as "Authorization: Bearer …"):\n${j.secret}`;
  });
});
