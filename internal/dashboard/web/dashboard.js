// projector dashboard: polls the read API and draws tables and SVG charts.
// No dependencies. Errors are shown in #errors (and counted in
// document.body.dataset.errors) so headless tests can assert on them.
"use strict";

const POLL_MS = 3000;
const LIVE_POINTS = 60;
const live = { views: [], lag: [] };
let lastViews = null;
let refreshes = 0;

function reportError(msg) {
  const box = document.getElementById("errors");
  box.hidden = false;
  box.textContent += msg + "\n";
  document.body.dataset.errors = String(Number(document.body.dataset.errors || 0) + 1);
}
window.addEventListener("error", (e) => reportError("script error: " + e.message));
window.addEventListener("unhandledrejection", (e) => reportError("unhandled: " + (e.reason && e.reason.message || e.reason)));

async function api(path) {
  const res = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await res.json();
  if (!res.ok) {
    const err = new Error(path + ": " + res.status + " " + (body.error || ""));
    err.status = res.status;
    err.detail = body.error || "";
    throw err;
  }
  return body;
}

// el builds an element: el("td", {class: "num"}, "text", child...).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function fmt(n) { return Number(n).toLocaleString("en-US"); }
function money(cents) { return "$" + (cents / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }); }
function time(ms) { return new Date(ms).toISOString().replace("T", " ").slice(0, 19); }

// fill replaces a table's rows; cols: [header, cell(row, i), numeric?].
function fill(table, rows, cols, empty) {
  table.replaceChildren(el("tr", {}, ...cols.map(([h, , num]) => el("th", num ? { class: "num" } : {}, h))));
  if (!rows.length) {
    table.append(el("tr", {}, el("td", { colspan: cols.length, class: "muted" }, empty || "nothing yet")));
    return;
  }
  rows.forEach((r, i) => table.append(el("tr", {}, ...cols.map(([, f, num]) => el("td", num ? { class: "num" } : {}, f(r, i))))));
}

function bar(value, max) {
  const w = max > 0 ? Math.max(2, Math.round(80 * value / max)) : 2;
  const b = el("span", { class: "bar" });
  b.style.width = w + "px"; // through CSSOM: the CSP refuses style attributes
  return b;
}

// ranking renders a RankPage with a score bar.
function ranking(table, page, scoreName, extra) {
  const max = page.items.length ? page.items[0].score : 0;
  const cols = [["#", (r) => r.rank, true], ["product", (r) => r.product_id], [scoreName, (r) => fmt(r.score), true], ["", (r) => bar(r.score, max)]];
  if (extra) cols.splice(3, 0, ...extra);
  fill(table, page.items, cols);
}

// chart draws series [{name, color, points: [{x, y}]}] as an SVG line chart.
function chart(container, series, labels) {
  const W = 560, H = 170, L = 44, B = 20, T = 8;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", "100%");
  const n = Math.max(...series.map((s) => s.points.length), 2);
  const max = Math.max(1, ...series.flatMap((s) => s.points.map((p) => p.y)));
  const x = (i) => L + (W - L - 8) * i / (n - 1);
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  for (const f of [0, 0.5, 1]) {
    add("line", { x1: L, x2: W - 8, y1: y(max * f), y2: y(max * f), stroke: "#e3e6ec" });
    add("text", { x: L - 4, y: y(max * f) + 3, "text-anchor": "end" }, fmt(Math.round(max * f)));
  }
  (labels || []).forEach((lab, i) => { if (lab) add("text", { x: x(i), y: H - 6, "text-anchor": "middle" }, lab); });
  series.forEach((s, si) => {
    if (!s.points.length) return;
    const d = s.points.map((p, i) => (i ? "L" : "M") + x(i).toFixed(1) + "," + y(p.y).toFixed(1)).join(" ");
    add("path", { d, fill: "none", stroke: s.color, "stroke-width": 2 });
    add("text", { x: L + 8 + si * 120, y: T + 10 }, s.name).style.fill = s.color; // CSSOM, over "svg text"
  });
  container.replaceChildren(svg);
}

async function refreshOverview() {
  const o = await api("/api/overview");
  document.getElementById("clock").textContent = time(o.now) + " UTC · buckets in " + o.time_zone + " · day " + o.day;
  for (const c of document.querySelectorAll(".counter")) {
    const stat = c.dataset.stat;
    const v = o.today[stat] || 0;
    c.querySelector(".value").textContent = stat === "revenue_cents" ? money(v) : fmt(v);
  }
  if (lastViews !== null) {
    const rate = Math.max(0, (o.today.views - lastViews.v) * 1000 / Math.max(1, o.now - lastViews.t));
    live.views.push(rate);
    document.querySelector('.counter[data-stat="views"] .rate').textContent = rate.toFixed(1) + " /s";
  }
  lastViews = { v: o.today.views, t: o.now };
  if (o.hourly) {
    const hours = o.hourly.views.map((p) => p.bucket.slice(11) + "h");
    chart(document.getElementById("hourly"), [
      { name: "views", color: "#2f6fde", points: o.hourly.views.map((p) => ({ y: p.value })) },
      { name: "orders ×10", color: "#e0702f", points: o.hourly.orders.map((p) => ({ y: p.value * 10 })) },
    ], hours.map((h, i) => (i % 4 === 0 ? h : "")));
  }
}

async function refreshRankings() {
  const [today, week, trend, viewed, recent] = await Promise.all([
    api("/api/bestsellers/today?size=10"), api("/api/bestsellers/week?size=10"), api("/api/trending?n=10"),
    api("/api/most-viewed/today?size=10"), api("/api/orders/recent?minutes=5&limit=10"),
  ]);
  ranking(document.getElementById("best-today"), today, "units");
  ranking(document.getElementById("best-week"), week, "score", [["units", (r) => fmt(r.units), true], ["days", (r) => r.days, true]]);
  document.getElementById("week-built").textContent = week.built_at ? "(snapshot " + time(week.built_at).slice(11) + ")" : "";
  ranking(document.getElementById("trending"), trend, "weighted views");
  ranking(document.getElementById("most-viewed"), viewed, "views");
  document.getElementById("recent-count").textContent = "(" + fmt(recent.count) + " in the last 5 minutes)";
  fill(document.getElementById("recent"), recent.orders, [["order", (r) => r.id], ["at", (r) => time(r.ts).slice(11)]], "no orders in the last 5 minutes");
}

async function refreshStatus() {
  let s;
  try {
    s = await api("/api/status");
  } catch (e) {
    if (e.status === 404) { document.getElementById("status").textContent = "not available"; return; }
    throw e;
  }
  const pill = document.getElementById("health");
  const healthy = s.projections === "ready" && s.alive > 0;
  pill.className = "pill " + (healthy ? "ok" : "bad");
  pill.textContent = "projections " + s.projections + " · " + s.alive + " consumer" + (s.alive === 1 ? "" : "s") + " · lag " + (s.lag.measured_at ? fmt(s.lag.total) : "?");
  if (s.lag.measured_at) live.lag.push(s.lag.total);
  const box = document.getElementById("status");
  const t = el("table", {});
  fill(t, s.consumers, [["process", (c) => c.process], ["last seen", (c) => time(c.last_seen).slice(11)], ["", (c) => (c.alive ? "alive" : "gone")]], "no consumer publishes its settings");
  const lag = el("table", {});
  fill(lag, s.lag.partitions || [], [["topic", (p) => p.topic], ["partition", (p) => p.partition, true], ["end", (p) => fmt(p.end), true], ["lag", (p) => fmt(p.lag), true]], s.lag.error || "no partitions");
  box.replaceChildren(el("div", {}, "projections: ", el("b", {}, s.projections), s.holds.length ? " · held " + s.holds.join(", ") : ""), rebuilds(s.rebuilding || []), t,
    el("h3", {}, "Lag " + (s.lag.measured_at ? "(total " + fmt(s.lag.total) + ")" : "")), lag, s.lag.error ? el("div", { class: "muted" }, s.lag.error) : "");
}

// duration formats seconds as "1h2m3s".
function duration(secs) {
  const h = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60), s = secs % 60;
  return (h ? h + "h" : "") + (h || m ? m + "m" : "") + s + "s";
}

// rebuilds shows each projection being rebuilt with the replayer's progress
// (percentage, rate, ETA), or nothing.
function rebuilds(list) {
  if (!list.length) return "";
  const box = el("div", { id: "rebuilding" }, el("h3", {}, "Rebuilding"));
  for (const r of list) {
    const eta = r.eta_seconds < 0 ? "?" : duration(r.eta_seconds);
    box.append(el("div", { class: "rebuild", "data-projection": r.projection },
      el("b", {}, r.projection), " rebuilding " + r.percent.toFixed(1) + "% ",
      el("progress", { max: String(Math.max(r.total, 1)), value: String(r.done) }),
      " " + fmt(r.done) + " / " + fmt(r.total) + " records · " + fmt(r.rate) + " ev/s · ETA " + eta,
      r.stalled ? el("span", { class: "stalled" }, " · no progress since " + time(r.updated_ms).slice(11) + ": rerun the replayer") : ""));
  }
  return box;
}

function drawLive() {
  const trim = (a) => a.splice(0, Math.max(0, a.length - LIVE_POINTS));
  trim(live.views); trim(live.lag);
  chart(document.getElementById("live"), [
    { name: "views/s", color: "#2f6fde", points: live.views.map((y) => ({ y })) },
    { name: "lag", color: "#d0342c", points: live.lag.map((y) => ({ y })) },
  ]);
}

const user = { id: "", histPage: 1, ordersPage: 1 };

function pager(box, page, total, size, go) {
  const pages = Math.max(1, Math.ceil(total / size));
  const prev = el("button", page > 1 ? {} : { disabled: "" }, "‹ prev");
  const next = el("button", page < pages ? {} : { disabled: "" }, "next ›");
  prev.onclick = () => go(page - 1);
  next.onclick = () => go(page + 1);
  box.replaceChildren(prev, next, el("span", { class: "muted" }, " page " + page + " of " + pages));
}

async function lookup() {
  if (!user.id) return;
  const u = encodeURIComponent(user.id);
  // History is kept per device and store when projections.history.scope is
  // set: the API then answers 400, shown in place of the list.
  const histOrNote = api("/api/history?size=10&page=" + user.histPage + "&user=" + u)
    .catch((e) => (e.status === 400 || e.status === 404 ? { items: [], total: 0, page: 1, size: 10, note: e.message } : Promise.reject(e)));
  const [lv, hist, orders] = await Promise.all([
    api("/api/last-viewed?user=" + u), histOrNote, api("/api/orders?size=5&page=" + user.ordersPage + "&user=" + u),
  ]);
  fill(document.getElementById("user-lv"), lv.items, [["product", (r) => r.product_id], ["viewed", (r) => time(r.ts)]]);
  fill(document.getElementById("user-hist"), hist.items, [["product", (r) => r.product_id], ["day", (r) => r.day], ["last view", (r) => time(r.ts).slice(11)]], hist.note);
  document.getElementById("hist-total").textContent = "(" + hist.total + ")";
  pager(document.getElementById("hist-pager"), hist.page, hist.total, hist.size, (p) => { user.histPage = p; guard(lookup)(); });
  document.getElementById("orders-total").textContent = "(" + orders.total + ")";
  const box = document.getElementById("user-orders");
  box.replaceChildren(...(orders.orders.length ? orders.orders.map((o) => el("div", { class: "order" },
    el("b", {}, o.id), " · " + time(o.ts) + " · " + money(o.total_cents), el("br", {}),
    el("span", { class: "muted" }, o.items.map((i) => i.quantity + "× " + i.product_id + " @ " + money(i.price_cents)).join(", ")))) : [el("span", { class: "muted" }, "no orders")]));
  pager(document.getElementById("orders-pager"), orders.page, orders.total, orders.size, (p) => { user.ordersPage = p; guard(lookup)(); });
}

// RANKINGS are the product lookup's rankings: the /api/rank name, a title
// and what the score counts.
const RANKINGS = [
  ["bestsellers-today", "Bestsellers today", "units"], ["bestsellers-week", "Bestsellers last 7 days", "score"],
  ["most-viewed-today", "Most viewed today", "views"], ["trending", "Trending", "weighted views"],
];
const AROUND = 2;
const product = { id: "" };

// productLookup shows the product's rank in each ranking with AROUND
// products above and below, "not ranked" where it has no entry.
async function productLookup() {
  const box = document.getElementById("product-ranks");
  const id = product.id;
  if (!id) { box.replaceChildren(); return; }
  const answers = await Promise.all(RANKINGS.map(([name]) =>
    api("/api/rank?ranking=" + name + "&around=" + AROUND + "&product=" + encodeURIComponent(id))
      .catch((e) => (e.status === 400 || e.status === 404 ? { error: e } : Promise.reject(e)))));
  if (id !== product.id) return; // a newer lookup took over
  const bad = answers.find((a) => a.error && a.error.status === 400);
  box.replaceChildren(...(bad ? [el("div", { class: "rank-line missing" }, bad.error.detail)]
    : RANKINGS.map(([name, title, unit], i) => rankBox(name, title, unit, answers[i]))));
  box.dataset.product = id;
}

// rankBox renders one /api/rank answer (or its 404).
function rankBox(name, title, unit, a) {
  const box = el("div", { class: "rank-box", "data-ranking": name }, el("h3", {}, title));
  if (a.error) {
    box.dataset.rank = "none";
    const notRanked = / not ranked in /.test(a.error.detail);
    box.append(el("div", { class: "rank-line missing" }, notRanked ? "not ranked" : a.error.detail));
    return box;
  }
  box.dataset.rank = String(a.rank);
  box.append(el("div", { class: "rank-line" }, el("b", {}, "#" + a.rank), " of " + fmt(a.total) + " · " + fmt(a.score) + " " + unit));
  const t = el("table", {});
  fill(t, a.around, [["#", (r) => r.rank, true], ["product", (r) => r.product_id], [unit, (r) => fmt(r.score), true]]);
  a.around.forEach((r, i) => { if (r.product_id === a.product_id) t.rows[i + 1].className = "me"; });
  box.append(t);
  return box;
}

// syncURL keeps the lookups in the address (?user=...&product=...).
function syncURL() {
  const q = new URLSearchParams();
  if (user.id) q.set("user", user.id);
  if (product.id) q.set("product", product.id);
  const s = q.toString();
  history.replaceState(null, "", s ? "?" + s : location.pathname);
}

// guard runs an async step, reporting its failure instead of throwing.
function guard(f) {
  return async () => {
    try { await f(); } catch (e) { reportError(e.message); }
  };
}

async function refresh() {
  await Promise.all([guard(refreshOverview)(), guard(refreshRankings)(), guard(refreshStatus)(), guard(productLookup)()]);
  drawLive();
  refreshes++;
  document.body.dataset.refreshes = String(refreshes);
  document.body.dataset.loaded = "true";
}

document.getElementById("user-form").addEventListener("submit", (e) => {
  e.preventDefault();
  user.id = document.getElementById("user").value.trim();
  user.histPage = user.ordersPage = 1;
  syncURL();
  guard(lookup)();
});

document.getElementById("product-form").addEventListener("submit", (e) => {
  e.preventDefault();
  product.id = document.getElementById("product").value.trim();
  syncURL();
  guard(productLookup)();
});

const params = new URLSearchParams(location.search);
const initial = params.get("user");
if (initial) {
  document.getElementById("user").value = initial;
  user.id = initial;
  guard(lookup)();
}
product.id = params.get("product") || "";
document.getElementById("product").value = product.id;
refresh();
setInterval(refresh, POLL_MS);
