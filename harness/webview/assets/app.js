// The live map of one fabric: /api/fabric draws it and refreshes the
// utilization each second, /api/events (server-sent) applies port state
// changes, node deaths and drops as the server's poller sees them and
// lists them in the timeline. Plain script, no build step.
"use strict";

const stateColor = { Down: "#d62728", Init: "#ff7f0e", Armed: "#bcbd22" };
const unknownColor = "#999999";
const idle = [0x2c, 0xa0, 0x2c], busy = [0x1f, 0x3f, 0xbf];

// shade is how far along the idle-to-busy ramp a utilization is drawn:
// its square root, so that the 5-40 % an emulated fabric's links mostly
// carry shows, not only links near their rate.
function shade(util) {
  return Math.sqrt(Math.max(0, Math.min(1, util || 0)));
}

// linkColor: a link not Active shows its state; an Active one shades from
// green (idle) to blue (its busier direction at full rate).
function linkColor(state, util) {
  if (state !== "Active") return stateColor[state] || unknownColor;
  const u = shade(util);
  const c = idle.map((v, i) => Math.round(v + (busy[i] - v) * u));
  return "#" + c.map((v) => v.toString(16).padStart(2, "0")).join("");
}

const rank = { Down: 1, Init: 2, Armed: 3, Active: 4 };
// lower is the lower of two port states; an unknown end (a dead node's)
// gives way to the live end's, as the server's lowerState does.
function lower(a, b) {
  const ra = rank[a] || 0, rb = rank[b] || 0;
  if (!ra) return b;
  if (!rb) return a;
  return rb < ra ? b : a;
}

let cy = null;
let fabricName = "";
let shape = ""; // the node and link ids drawn: a change redraws the map
let selected = "";

function banner(text) {
  const b = document.getElementById("banner");
  b.textContent = text;
  b.hidden = !text;
}

function notRunning(name, detail) {
  banner("fabric " + (name || fabricName) + " is not running" + (detail ? " (" + detail + ")" : ""));
}

// recent: a port or node whose drops or errors rose over the server's
// window (the last second) is marked; its totals since it started are in
// the node's detail.
function recent(x) {
  return x.new_drops + x.new_errors > 0;
}

function edgeData(l) {
  return {
    id: l.id, source: l.a.node, target: l.b.node, state: l.state, util: l.utilization,
    stateA: l.a.state, stateB: l.b.state, faulty: recent(l.a) || recent(l.b),
    color: linkColor(l.state, l.utilization), width: 2 + 6 * shade(l.utilization),
  };
}

function draw(f) {
  const elements = [];
  for (const n of f.nodes) {
    const el = { group: "nodes", data: { id: n.name, type: n.type, alive: n.alive, faulty: recent(n) } };
    if (f.layout === "fattree") el.position = { x: n.x, y: n.y };
    elements.push(el);
  }
  for (const l of f.links) elements.push({ group: "edges", data: edgeData(l) });
  if (cy) cy.destroy();
  cy = cytoscape({
    container: document.getElementById("cy"),
    elements: elements,
    layout: f.layout === "fattree" ? { name: "preset" } : { name: "cose", animate: false, randomize: false },
    style: [
      // A label sits on a light box: it stays readable where cables
      // fan out under a switch.
      { selector: "node", style: { label: "data(id)", "font-size": 11, "text-valign": "bottom", width: 22, height: 22, "background-color": "#5b7db1",
        "text-background-color": "#fff", "text-background-opacity": 0.8, "text-background-padding": "1px" } },
      { selector: "node[type = 'switch']", style: { shape: "round-rectangle", width: 34, "background-color": "#6a6a6a", "font-size": 12, "font-weight": "bold" } },
      { selector: "node[?faulty]", style: { "border-width": 3, "border-color": "#d62728" } },
      { selector: "node[!alive]", style: { "background-color": "#fff", "border-width": 3, "border-color": "#d62728", "border-style": "dashed" } },
      { selector: "node:selected", style: { "overlay-opacity": 0.2, "overlay-color": "#000" } },
      { selector: "edge", style: { "line-color": "data(color)", width: "data(width)", "curve-style": "bezier" } },
      { selector: "edge[?faulty]", style: { "line-style": "dashed" } },
    ],
  });
  cy.on("tap", "node", (e) => showNode(e.target.id()));
  window.ibfab.cy = cy;
}

function update(f) {
  fabricName = f.fabric;
  document.getElementById("fabric-name").textContent = f.fabric;
  document.getElementById("polled").textContent = "polled " + new Date(f.polled).toLocaleTimeString();
  const ids = f.nodes.map((n) => n.name).concat(f.links.map((l) => l.id)).join(" ");
  if (ids !== shape) {
    shape = ids;
    draw(f);
    return;
  }
  cy.batch(() => {
    for (const n of f.nodes) cy.getElementById(n.name).data({ alive: n.alive, faulty: recent(n) });
    for (const l of f.links) cy.getElementById(l.id).data(edgeData(l));
  });
}

async function refresh() {
  try {
    const r = await fetch("api/fabric", { cache: "no-store" });
    const body = await r.json();
    if (!r.ok) {
      notRunning(body.fabric, body.error);
      return;
    }
    banner("");
    update(body);
    if (selected) showNode(selected);
  } catch (err) {
    banner("ibfab serve does not answer (" + err.message + ")");
  }
}

function cell(tag, text) {
  const c = document.createElement(tag);
  c.textContent = text;
  return c;
}

function table(head, rows) {
  const t = document.createElement("table");
  const tr = t.insertRow();
  for (const h of head) tr.appendChild(cell("th", h));
  for (const r of rows) {
    const row = t.insertRow();
    for (const v of r) row.appendChild(cell("td", String(v)));
  }
  return t;
}

async function showNode(name) {
  selected = name;
  const panel = document.getElementById("panel");
  let d;
  try {
    const r = await fetch("api/node/" + encodeURIComponent(name), { cache: "no-store" });
    d = await r.json();
    if (!r.ok) {
      panel.replaceChildren(cell("p", d.error));
      return;
    }
  } catch (err) {
    panel.replaceChildren(cell("p", err.message));
    return;
  }
  const parts = [cell("h2", d.name + " (" + d.type + ", GUID " + d.guid + ", pid " + d.pid + (d.alive ? "" : ", dead") + ")")];
  if (d.error) parts.push(cell("p", d.error));
  for (const p of d.ports || []) {
    parts.push(cell("h2", "port " + p.port + (p.peer ? " → " + p.peer : "")));
    const util = d.utilization && d.utilization[p.port];
    const info = [["State", p.state], ["Phys", p.phys], ["LID", p.lid], ["Rate", p.width ? p.width + " " + p.speed : "-"],
      ["Utilization", util === undefined ? "-" : (100 * util).toFixed(1) + "%"],
      ["P_Keys", (p.pkeys || []).join(" ") || "-"]];
    for (const [k, v] of Object.entries(p.drops || {})) info.push(["drops " + k + " (total)", v]);
    parts.push(table(["PortInfo", ""], info));
    parts.push(table(["Counter", "value"], Object.entries(p.counters || {})));
    if (p.credits && p.credits.length) {
      parts.push(table(["VL", "avail", "queued", "rx used/size", "down used/size"],
        p.credits.map((c) => [c.vl, c.available, c.queued, c.rx_used + "/" + c.rx_capacity, c.down_used + "/" + c.down_capacity])));
    }
  }
  panel.replaceChildren(...parts);
}

function describe(e) {
  switch (e.kind) {
    case "port_state": return e.node + "[" + e.port + "] " + e.from + " → " + e.to;
    case "node_died": return e.node + " died" + (e.error ? ": " + e.error : "");
    case "node_alive": return e.node + " answers again";
    case "drops": return e.node + "[" + e.port + "] +" + e.delta + " drops/errors";
    case "fabric_down": return "fabric not running: " + e.error;
    case "fabric_up": return "fabric running";
  }
  return e.kind;
}

// apply changes the map at once, before the next refresh.
function apply(e) {
  if (!cy) return;
  if (e.kind === "node_died" || e.kind === "node_alive") {
    cy.getElementById(e.node).data("alive", e.kind === "node_alive");
    return;
  }
  if (e.kind !== "port_state" && e.kind !== "drops") return;
  const end = e.node + "[" + e.port + "]";
  cy.edges().forEach((edge) => {
    const id = edge.id();
    const isA = id.startsWith(end + "-"), isB = id.endsWith("-" + end);
    if (!isA && !isB) return;
    if (e.kind === "drops") {
      edge.data("faulty", true);
      return;
    }
    const d = edge.data();
    const a = isA ? e.to : d.stateA, b = isB ? e.to : d.stateB;
    const state = lower(a, b);
    edge.data({ stateA: a, stateB: b, state: state, color: linkColor(state, d.util) });
  });
}

let first = true;
function onEvent(msg) {
  const e = JSON.parse(msg.data);
  const wasFirst = first;
  first = false;
  if (e.kind === "fabric_down") notRunning(fabricName, e.error);
  if (e.kind === "fabric_up") {
    if (wasFirst) return; // the stream's greeting: nothing happened
    refresh();
  }
  apply(e);
  const li = cell("li", new Date(e.time).toLocaleTimeString() + "  " + describe(e));
  if (e.kind !== "port_state" || e.to !== "Active") li.className = "bad";
  const tl = document.getElementById("timeline");
  tl.prepend(li);
  while (tl.children.length > 500) tl.lastChild.remove();
}

window.ibfab = { cy: null, linkColor: linkColor };
refresh().then(() => {
  const es = new EventSource("api/events");
  es.onmessage = onEvent;
  es.onopen = () => { first = true; };
  setInterval(refresh, 1000);
});
