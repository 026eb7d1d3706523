// Written by scripts/web-page from Sources/HearthWeb/Page: edit those files, then run it. Raw string
// literals, not byte arrays: a large [UInt8] literal type-checks slowly.

enum PageFiles {
    static let indexHTML = ##"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Hearth</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<header id="bar"><h1 id="title">Hearth</h1><span id="link" class="pill"></span><nav id="menu" hidden><button id="adm\##
in-open" type="button" class="ghost"></button><button id="users-open" type="button" class="ghost"></button><button i\##
d="password-open" type="button" class="ghost"></button><button id="logout" type="button" class="ghost"></button></na\##
v><div id="banner" role="status" hidden></div></header>
<main id="main">
<form id="login" class="panel" hidden><h2 id="login-title"></h2><p id="login-hint" class="hint"></p><label id="code-\##
row"><span id="code-label"></span><input id="code" autocomplete="one-time-code" spellcheck="false"></label><label id\##
="user-row"><span id="user-label"></span><input id="user" autocomplete="username" value="admin"></label><label><spa\##
n id="password-label"></span><input id="password" type="password" autocomplete="current-password"></label><button id\##
="login-go" type="submit"></button><p id="login-error" class="error" role="alert"></p></form>
<section id="home" hidden><div id="peers" class="hint"></div><div id="groups"></div><div id="rooms"></div></section>
<section id="admin" hidden><div class="admin-head"><nav id="admin-tabs" role="tablist"></nav><button id="admin-close\##
" type="button" class="ghost"></button></div><div id="admin-panels"></div></section>
<form id="password-form" class="panel" hidden><h2 id="password-title"></h2><label><span id="current-label"></span><i\##
nput id="current" type="password" autocomplete="current-password"></label><label><span id="new-label"></span><inpu\##
t id="new" type="password" autocomplete="new-password"></label><button id="password-go" type="submit"></button><butt\##
on id="password-close" type="button" class="ghost"></button><p id="password-error" class="error" role="alert"></p></\##
form>
<form id="users-form" class="panel" hidden><h2 id="users-title"></h2><ul id="users"></ul><label><span id="viewer-lab\##
el"></span><input id="viewer-name" autocomplete="off"></label><label><span id="viewer-password-label"></span><inpu\##
t id="viewer-password" type="password" autocomplete="new-password"></label><button id="viewer-go" type="submit"></bu\##
tton><button id="users-close" type="button" class="ghost"></button><p id="users-error" class="error" role="alert"></\##
p></form>
</main>
</body>
</html>
"""##

    static let appCSS = ##"""
:root{--bg:#f6f5f2;--card:#fff;--fg:#1d1c1a;--mute:#6b675f;--line:#dedad2;--accent:#b4501c;--on-accent:#fff;--ok:#2f\##
7d32;--bad:#b3261e;--warn:#8a5a00;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#171614;--card:#22201d;--fg:#eeebe5;--mute:#a39e94;--line:#38352f;--ac\##
cent:#f08a4b;--on-accent:#1d1c1a;--ok:#7bc67e;--bad:#f2837a;--warn:#e0b04a}}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem;padding:.6rem .8rem;border-bottom:1px solid var(--li\##
ne);background:var(--card);position:sticky;top:0;z-index:2}
h1{font-size:1.15rem;margin:0;flex:1}
h2{font-size:1.05rem;margin:.2rem 0 .6rem}
h3{font-size:.95rem;margin:1.2rem .2rem .4rem;color:var(--mute);text-transform:uppercase;letter-spacing:.04em}
nav{display:flex;gap:.3rem;flex-wrap:wrap}
main{padding:.6rem;max-width:72rem;margin:0 auto}
.panel{background:var(--card);border:1px solid var(--line);border-radius:.7rem;padding:1rem;max-width:26rem;margin:1\##
rem auto;display:flex;flex-direction:column;gap:.6rem}
label{display:flex;flex-direction:column;gap:.2rem;font-size:.9rem;color:var(--mute)}
input,select,button{font:inherit;color:inherit}
input,select{background:var(--bg);border:1px solid var(--line);border-radius:.4rem;padding:.4rem .5rem;min-width:0}
button{background:var(--accent);color:var(--on-accent);border:0;border-radius:.4rem;padding:.45rem .8rem;cursor:pointer}
button.ghost{background:transparent;color:var(--fg);border:1px solid var(--line)}
button:disabled,input:disabled,select:disabled{opacity:.5;cursor:not-allowed}
.pill{font-size:.8rem;padding:.15rem .55rem;border-radius:1rem;border:1px solid var(--line)}
.pill.up{color:var(--ok)}.pill.down{color:var(--bad)}
#banner{flex-basis:100%;margin:.2rem -.8rem -.6rem;padding:.5rem .8rem;background:var(--warn);color:#fff;font-size:.\##
9rem}
.rooms{display:grid;gap:.6rem}
.grid{display:grid;grid-template-columns:1fr;gap:.6rem}
@media (min-width:40rem){.grid{grid-template-columns:repeat(auto-fill,minmax(20rem,1fr))}}
@media (min-width:64rem){#rooms{columns:2 28rem;column-gap:.8rem}.room{break-inside:avoid-column}.room .grid{grid-te\##
mplate-columns:1fr}}
.card{background:var(--card);border:1px solid var(--line);border-radius:.7rem;padding:.7rem .8rem;display:flex;flex-\##
direction:column;gap:.4rem}
.card.offline{opacity:.65}
.head{display:flex;justify-content:space-between;gap:.4rem;align-items:baseline}
.name{font-weight:600;overflow-wrap:anywhere}
.src{font-size:.75rem;color:var(--mute);white-space:nowrap}
.dot{display:inline-block;width:.55rem;height:.55rem;border-radius:50%;background:var(--ok);margin-right:.25rem}
.dot.offline{background:var(--bad)}.dot.unknown{background:var(--mute)}
.trait{border-top:1px solid var(--line);padding-top:.35rem}
.tname{font-size:.8rem;color:var(--mute)}
.attrs{display:grid;grid-template-columns:auto 1fr;gap:.1rem .6rem;font-size:.85rem;margin:.2rem 0}
.attrs dt{color:var(--mute)}.attrs dd{margin:0;overflow-wrap:anywhere}
.cmds{display:flex;flex-wrap:wrap;gap:.3rem}
.cmds button{padding:.3rem .6rem;font-size:.85rem}
details{font-size:.85rem}summary{cursor:pointer;color:var(--mute)}
.row{display:flex;flex-wrap:wrap;gap:.3rem;align-items:end;margin:.3rem 0}
.row label{flex:1 1 6rem}
.error{color:var(--bad);font-size:.85rem;margin:0;min-height:1em}
.note{color:var(--warn);font-size:.85rem;margin:0}
.hint{color:var(--mute);font-size:.85rem}
.answer{font-size:.85rem}.answer p{margin:.1rem 0}
ul{padding-left:1.2rem}
#admin{max-width:72rem;margin:0 auto}
.admin-head{display:flex;gap:.4rem;align-items:center;justify-content:space-between;margin:.6rem 0}
#admin-tabs{display:flex;gap:.3rem;flex-wrap:wrap}
.admin-panel{background:var(--card);border:1px solid var(--line);border-radius:.7rem;padding:.8rem;display:flex;flex\##
-direction:column;gap:.5rem}
.admin-panel p{margin:.1rem 0}
.editor{display:flex;border:1px solid var(--line);border-radius:.4rem;background:var(--bg);height:min(28rem,55vh);ov\##
erflow:hidden}
.editor .gutter,.editor textarea{font:13px/1.45 ui-monospace,"DejaVu Sans Mono",monospace;margin:0;padding:.4rem}
.editor .gutter{color:var(--mute);text-align:right;min-width:3.2rem;overflow:hidden;user-select:none;border-right:1p\##
x solid var(--line);padding-bottom:3rem}
.editor .gutter .bad{color:#fff;background:var(--bad);border-radius:.2rem;font-weight:600}
.editor textarea{flex:1;border:0;resize:none;background:transparent;color:inherit;outline:none;white-space:pre;overf\##
low:auto}
.problems{margin:0;font-size:.85rem}.problems li{cursor:pointer}
table.wiring{border-collapse:collapse;font-size:.9rem}
.wiring th,.wiring td{text-align:left;padding:.25rem .6rem;border-bottom:1px solid var(--line)}
.wiring td.wire{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85rem}
label.inline{flex-direction:row;align-items:center;gap:.4rem}
ol.log{list-style:none;margin:0;padding:.3rem;max-height:32rem;overflow:auto;background:var(--bg);border:1px solid v\##
ar(--line);border-radius:.4rem;font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace}
ol.log li{display:flex;gap:.6rem;white-space:pre-wrap;overflow-wrap:anywhere}
ol.log time{color:var(--mute)}ol.log .lv{min-width:4.5rem;color:var(--mute)}
ol.log .lv-warning .lv{color:var(--warn)}ol.log .lv-error .lv,ol.log .lv-critical .lv{color:var(--bad)}
.matter-codes{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
.matter-codes img{background:#fff;border-radius:.3rem;padding:.2rem}
button.danger{background:var(--bad);border-color:var(--bad);color:#fff}
"""##

    static let appJS = ##"""
// Hearth's web page: one more client of the hub's contract (docs/web-api.md). Every string is in S.
"use strict";
const S = {
  signIn: "Sign in", setUp: "Set the admin password", setUpHint: "The hub printed a one-time setup code to its conso\##
le and journal; `hearthd web setup-code` on the hub prints it again.",
  code: "Setup code", user: "User", password: "Password", newPassword: "New password (at least 10 characters)", curr\##
entPassword: "Current password",
  logout: "Sign out", changePassword: "Password", users: "Viewers", addViewer: "Add viewer", viewerName: "Viewer's n\##
ame", viewerPassword: "Viewer's password",
  save: "Save", close: "Close", remove: "Remove", brokerUp: "Broker connected", brokerDown: "Broker disconnected",
  brokerDownBanner: "The hub has lost its MQTT broker: this page still works, but other clients and hubs do not se\##
e changes until it is back.",
  streamLost: "Live updates interrupted; reconnecting…", noRoom: "No room", peers: "Hubs", thisHub: "this hub",
  online: "online", offline: "offline", unknown: "unknown", direct: "direct", localPeer: "peer hub", remote: "remot\##
e hub", mixed: "mixed", unspecified: "—",
  rename: "Name and room", name: "Name", room: "Room (empty: none)", send: "Send", set: "Set", busy: "The device i\##
s busy: try again in a moment.",
  viewer: "Viewer: you see the home but cannot change it.", peerDevice: "Shown as its hub summarises it; open that h\##
ub's page to control it.",
  failed: "Refused", information: "Device information", wrong: "Could not sign in", null: "none", passwordChanged: "\##
Password changed.",
  groups: "Groups", group: "group", members: "Members", groupOn: "On", groupOff: "Off", groupToggle: "Toggle", scene\##
s: "Scenes",
  ran: "ran on", ranNothing: "ran on no device", notAnswered: "did not answer in time (it may have run)", refusedBy\##
: "refused by", sending: "Sending…", yes: "yes", no: "no",
  admin: "Administration", configuration: "Configuration", wiring: "Wiring", logs: "Logs",
  check: "Check", saveApply: "Save and apply", checking: "Checking…", checkedOK: "No problems: this configuration ca\##
n be applied.",
  problems: "problem(s): nothing was saved.", warnings: "warning(s)", line: "line", column: "column",
  restarting: "Saved to {file}. The hub is restarting with it…", restarted: "The hub is back with the new configurat\##
ion.",
  configHint: "The configuration as the hub runs it. Values from secrets.yaml are written `!secret NAME` and never s\##
hown. A save is checked as `hearthd check-config` checks it; only a configuration without problems is written, the\##
n the hub restarts to apply it.",
  wiringHint: "What each device uses on the board, as `hearthd check-config` lists it.",
  device: "Device", type: "Type", hardware: "Hardware", level: "Level",
  logsHint: "The hub's recent lines, newest last, live. Secrets are never shown.",
  levels: { trace: "Trace", debug: "Debug", info: "Info", notice: "Notice", warning: "Warning", error: "Error", crit\##
ical: "Critical" },
  // Traits, attributes, commands, fields and enumeration cases as a person reads them; any other name is split from
  // lowerCamelCase (words below), so a maker's own trait reads as words too.
  names: {
    onOff: "On", currentLevel: "Level", minLevel: "Lowest level", maxLevel: "Highest level",
    moveToLevel: "Set level", moveToLevelWithOnOff: "Dim", stopWithOnOff: "Stop and switch", stopMoveStep: "Stop",
    transitionTime: "Transition (0.1 s)", onOffTransitionTime: "On/off transition (0.1 s)", onTransitionTime: "On tr\##
ansition (0.1 s)",
    offTransitionTime: "Off transition (0.1 s)", onLevel: "Level when switched on", startUpCurrentLevel: "Level at p\##
ower-up",
    startUpOnOff: "State at power-up", globalSceneControl: "Scene in control", onTime: "On for (0.1 s)", offWaitTime\##
: "Off wait (0.1 s)",
    offWithEffect: "Off with effect", onWithTimedOff: "On for a time", onWithRecallGlobalScene: "On with the last sc\##
ene",
    identifyTime: "Identify for (s)", identifyType: "Identify by", measuredValue: "Reading", minMeasuredValue: "Lowe\##
st reading", maxMeasuredValue: "Highest reading",
    tolerance: "Tolerance", sceneTableSize: "Scene slots", fabricSceneInfo: "Scenes held",
    colorTemperatureMireds: "Colour temperature (mired)", currentPosition: "Position",
    numberOfPositions: "Positions", multiPressMax: "Most presses", fanMode: "Mode", percentSetting: "Speed (%)",
    percentCurrent: "Speed now (%)", upOrOpen: "Open", downOrClose: "Close", stopMotion: "Stop",
    goToLiftPercentage: "Go to (%)", currentPositionLiftPercentage: "Open (%)",
    vendorName: "Maker", vendorID: "Maker id", productName: "Product", productID: "Product id", nodeLabel: "Label",
    hardwareVersionString: "Hardware version", softwareVersionString: "Software version", serialNumber: "Serial number",
    uniqueID: "Unique id", reachable: "Reachable", featureMap: "Features", OnOffPlugInUnit: "Plug", GenericSwitch: "\##
Switch",
  },
  traits: {
    onOff: "Power", levelControl: "Brightness", relativeHumidityMeasurement: "Humidity", temperatureMeasurement: "Te\##
mperature",
    scenesManagement: "Scenes", colorControl: "Colour", fanControl: "Fan", windowCovering: "Blind", occupancySensing\##
: "Occupancy",
  },
};
Object.assign(S, {
  backup: "Backup",
  backupHint: "A backup holds the configuration (without the broker's user name and password, and without secrets.ya\##
ml), the board file and the state: each device's state, names and rooms, and the Matter storage (fabrics, keys, endp\##
oint numbers), so a hub restored from it keeps its Matter pairings. The page's accounts are not in it.",
  download: "Download a backup", restore: "Restore this backup", restoreHint: "A restore checks the backup's configu\##
ration as check-config does; only then is it written, and the hub restarts with it.",
  restoring: "Restoring…", restored: "Restored: the hub is restarting with the backup.", restoredNoRestart: "Restore\##
d: restart the hub to run with the backup.",
  restoreFailed: "Not restored", chooseFile: "Backup file (.tar)",
});
Object.assign(S, {
  matter: "Matter",
  matterOff: "The hub's Matter node is off.",
  matterOn: "To turn it on, set `matter: {enabled: true}` in the configuration (the Configuration tab) and save: th\##
e hub restarts with it.",
  matterPair: "Pair the hub: scan this QR code in the ecosystem's app, or type the manual code.",
  matterWindowHere: "A commissioning window is open for another ecosystem: pair it with these codes.",
  matterWindowElsewhere: "A commissioning window is open, opened by another administrator: its codes are shown wher\##
e it was opened.",
  matterManual: "Manual code", matterQR: "QR code", matterCloses: "Closes in", matterClosed: "The window has closed.",
  matterFabrics: "Fabrics (ecosystems the hub is paired with)", matterNoFabrics: "The hub is not paired with any eco\##
system yet.",
  matterIndex: "Index", matterLabel: "Label", matterVendor: "Vendor", matterFabricId: "Fabric id", matterNodeId: "No\##
de id",
  matterOpen: "Open a window for another ecosystem", matterOpening: "Opening…",
  matterRemoveAsk: "Remove fabric {index}? Its ecosystem loses the hub and its devices; the others keep them.",
  matterRemoveYes: "Remove the fabric", cancel: "Cancel",
});
// The catalogue in the page's language: the hub chose it from Accept-Language and said so in <html lang>.
function translate(into, from) {
  for (const k of Object.keys(into)) if (from && Object.hasOwn(from, k)) {
    if (typeof into[k] === "object") translate(into[k], from[k]); else into[k] = from[k];
  }
}
if (document.documentElement.lang === "de" && typeof DE === "object") translate(S, DE);
const $ = (id) => document.getElementById(id);
const docs = new Map(), pending = new Set();
let home = [], traits = {}, status = null, role = "viewer", source = null, hubID = "", groups = [], sent = 0;

function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else if (v === true) e.setAttribute(k, ""); else if (\##
v !== false && v != null) e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k != null) e.append(k.nodeType ? k : String(k));
  return e;
}

async function api(path, body, method) {
  const opts = { method: method || (body === undefined ? "GET" : "POST"), credentials: "same-origin", headers: {} };
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const r = await fetch(path, opts);
  let j = {};
  try { j = await r.json(); } catch (e) { j = { ok: false, error: { message: r.statusText } }; }
  j.httpStatus = r.status;
  return j;
}

function texts() {
  for (const [id, key] of [["code-label", "code"], ["user-label", "user"], ["password-label", "password"], ["logout"\##
, "logout"], ["password-open", "changePassword"], ["users-open", "users"],
    ["password-title", "changePassword"], ["current-label", "currentPassword"], ["new-label", "newPassword"], ["pass\##
word-go", "save"], ["password-close", "close"],
    ["users-title", "users"], ["viewer-label", "viewerName"], ["viewer-password-label", "viewerPassword"], ["viewer-\##
go", "addViewer"], ["users-close", "close"],
    ["admin-open", "admin"], ["admin-close", "close"]]) $(id).textContent = S[key];
}

function show(which) {
  for (const id of ["login", "home", "password-form", "users-form", "admin"]) $(id).hidden = id !== which;
}

async function start() {
  texts();
  const s = await api("/api/session");
  if (s.ok) return signedIn(s);
  if (source) { source.close(); source = null; }
  $("menu").hidden = true;
  $("link").textContent = "";
  const setup = !!s.setupNeeded;
  $("login-title").textContent = setup ? S.setUp : S.signIn;
  $("login-hint").textContent = setup ? S.setUpHint : "";
  $("code-row").hidden = !setup; $("user-row").hidden = setup;
  $("password-label").textContent = setup ? S.newPassword : S.password;
  $("password").autocomplete = setup ? "new-password" : "current-password";
  $("login-go").textContent = setup ? S.setUp : S.signIn;
  $("login").dataset.setup = setup ? "1" : "";
  show("login");
}

async function signedIn(s) {
  role = s.role;
  $("menu").hidden = false;
  $("users-open").hidden = role !== "admin";
  $("admin-open").hidden = role !== "admin";
  show("home");
  traits = await api("/api/traits");
  if (role !== "admin") banner(S.viewer, "viewer");
  connect();
}

function connect() {
  if (source) source.close();
  source = new EventSource("/api/events");
  source.addEventListener("status", (e) => { status = JSON.parse(e.data); hubID = status.hub; drawStatus(); });
  source.addEventListener("home", (e) => { home = JSON.parse(e.data); drawAll(); loadGroups(); });
  source.addEventListener("device", (e) => { const d = JSON.parse(e.data); docs.set(d.id, d); drawDevice(d.id); });
  source.addEventListener("ready", () => { if ($("banner").dataset.kind === "stream") banner(); adminReconnected(); });
  adminStream(source);
  source.onerror = async () => {
    banner(S.streamLost, "stream");
    if (source && source.readyState === EventSource.CLOSED) { source = null; setTimeout(start, 2000); }
    else { const s = await api("/api/session"); if (!s.ok) start(); }
  };
}

function banner(text, kind) {
  const b = $("banner");
  if (!text) { if (b.dataset.kind !== "viewer" && role !== "admin") return banner(S.viewer, "viewer"); b.hidden = tr\##
ue; b.dataset.kind = ""; return; }
  b.textContent = text; b.hidden = false; b.dataset.kind = kind;
}

function drawStatus() {
  const up = status.broker.connected, link = $("link");
  link.textContent = up ? S.brokerUp : S.brokerDown;
  link.className = "pill " + (up ? "up" : "down");
  $("title").textContent = "Hearth · " + status.hub;
  if (!up) banner(S.brokerDownBanner, "broker"); else if ($("banner").dataset.kind === "broker") banner();
  $("peers").textContent = status.peers.length ? S.peers + ": " + status.peers.map((p) => p.hub + " (" + (S[p.status\##
] || p.status) + ")").join(", ") : "";
}

function rooms() {
  const by = new Map();
  for (const d of home) {
    const room = d.roomId || "";
    if (!by.has(room)) by.set(room, []);
    by.get(room).push(d);
  }
  return [...by.entries()].sort((a, b) => (a[0] === "") - (b[0] === "") || a[0].localeCompare(b[0]));
}

function key(d) { return (d.hub || hubID) + "/" + d.id; }

function drawAll() {
  const root = $("rooms");
  root.replaceChildren(...rooms().map(([room, list]) => h("section", { class: "room" }, h("h3", {}, room || S.noRoom),
    h("div", { class: "grid" }, list.map((d) => document.getElementById("card-" + key(d)) || h("article", { class: "\##
card", id: "card-" + key(d) }))))));
  for (const d of home) drawDevice(d.id, d.hub);
}

function connectivity(c) {
  const state = (c && c.connectivityState) || "unknown", where = (c && c.dataSourceLocality) || "unspecified";
  return h("span", { class: "src", title: state }, h("span", { class: "dot " + state }), (S[state] || state\##
) + " · " + (S[where] || where));
}

function drawDevice(id, hub) {
  const summary = home.find((d) => d.id === id && (hub ? d.hub === hub : (d.hub || hubID) === hubID));
  if (!summary) return;
  const card = document.getElementById("card-" + key(summary));
  if (!card) return;
  const doc = (summary.hub || hubID) === hubID ? docs.get(id) : null, d = doc || summary;
  const c = d.sourceConnectivity || {};
  // A change of values only (a fade, a sensor) updates the values in place: open forms and what is typed stay.
  const shape = JSON.stringify([role, d.name, d.roomId, c, doc ? d.types.map((t) => [t.type, t.sourceConnectivity,
    Object.entries(t.traits || {}).map(([n, tr]) => [n, tr.sourceConnectivity, Object.keys(tr.attributes || {}), tr.\##
commands, tr.attributeInfo])]) : null]);
  if (card.dataset.shape === shape && doc) {
    for (const t of d.types) for (const [name, trait] of Object.entries(t.traits || {})) for (const [a, v] of Object\##
.entries(trait.attributes || {})) {
      const e = card.querySelector('[data-attribute="' + CSS.escape(name + "." + a) + '"]');
      if (e) showValue(e, v, ((traits[name] || {}).attributes || {})[a]);
    }
    return;
  }
  if (card.contains(document.activeElement) && document.activeElement.tagName !== "BUTTON") { pending.add(key(summar\##
y)); return; }
  card.dataset.shape = shape;
  card.className = "card " + (c.connectivityState || "");
  card.dataset.device = id;
  const kids = [h("div", { class: "head" }, h("span", { class: "name" }, d.name || d.id), connectivity(c))];
  if (!doc) kids.push(h("p", { class: "hint" }, (summary.hub && summary.hub !== hubID ? summary.hub + ": " : "") + S\##
.peerDevice));
  else for (const t of d.types) for (const [name, trait] of ordered(t.traits)) kids.push(drawTrait(d, t, name, trait));
  if (doc) kids.push(drawRename(d));
  kids.push(h("p", { class: "error", role: "alert" }, (card.querySelector(".error") || {}).textContent || ""));
  // Forms a person opened stay open across the redraw of a change.
  const open = new Set([...card.querySelectorAll("details[open]")].map(formKey));
  card.replaceChildren(...kids);
  for (const e of card.querySelectorAll("details")) if (open.has(formKey(e))) e.open = true;
}

// A device's own state first; the traits every device has for housekeeping last.
const LAST = ["identify", "groups", "scenesManagement", "basicInformation"];
function ordered(traits) {
  return Object.entries(traits || {}).sort((a, b) => LAST.indexOf(a[0]) - LAST.indexOf(b[0]));
}

function formKey(e) { const t = e.closest("[data-trait]"); return (t ? t.dataset.trait : "") + "/" + e.dataset.form; }

// A name as words: the catalogue's entry, or lowerCamelCase split (`dev.hearth.simulatedSwitch` → "Simulated switch").
function words(k, names) {
  const base = String(k).split(".").pop(), known = names || S.names;
  if (Object.hasOwn(known, k)) return known[k];
  if (Object.hasOwn(known, base)) return known[base];
  const w = base.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2").replace(/_/g, " ")\##
.toLowerCase();
  return w.charAt(0).toUpperCase() + w.slice(1);
}

// A value as a person reads it: yes/no, an enumeration by its case's name in words, lists and structures spelled out.
function value(v, shape) {
  if (v === null || v === undefined) return S.null;
  if (v === true || v === false) return v ? S.yes : S.no;
  if (Array.isArray(v)) return v.length ? v.map((x) => value(x)).join("; ") : S.null;
  if (typeof v === "object") return Object.entries(v).map(([k, x]) => words(k) + " " + value(x)).join(", ");
  if (typeof v === "string" && shape && shape.kind === "enum") return words(v);
  return String(v);
}

function showValue(e, v, shape) { e.textContent = value(v, shape); e.dataset.value = JSON.stringify(v); }

function drawTrait(d, t, name, trait) {
  const desc = (traits[name] || { attributes: {}, commands: {} }), admin = role === "admin";
  const attrs = h("dl", { class: "attrs" });
  const edits = [];
  for (const [a, v] of Object.entries(trait.attributes || {})) {
    const info = (trait.attributeInfo || {})[a], shape = desc.attributes[a], dd = h("dd", { "data-attribute": nam\##
e + "." + a });
    showValue(dd, v, shape);
    attrs.append(h("dt", { title: a }, words(a)), dd);
    if (info && info.writable && shape && shape.kind !== "other") edits.push([a, shape, v]);
  }
  const cmds = h("div", { class: "cmds" }), forms = [];
  for (const cmd of trait.commands || []) {
    // Bitmaps, structs and lists (kind "other") are left out: the hub takes their defaults.
    const fields = (((desc.commands[cmd] || {}).fields) || []).filter((f) => f.kind !== "other");
    if (!fields.length) cmds.append(h("button", { type: "button", disabled: !admin, "data-command": name + "." + cmd\##
, onclick: () => send(d, { type: t.type, trait: name, command: cmd }) }, words(cmd)));
    else forms.push(drawForm(d, cmd, words(cmd), fields, (args) => send(d, { type: t.type, trait: name, command: cmd\##
, args })));
  }
  const more = [];
  if (edits.length) {
    const f = drawForm(d, "set", S.set, edits.map(([a, shape, v]) => Object.assign({ name: a, value: v }, shape)), (\##
values) => send(d, { type: t.type, trait: name, update: values }));
    more.push(f);
  }
  const title = h("div", { class: "tname", title: name }, words(name, S.traits) + (t.type ? " · " + words(t.type\##
) : ""));
  // What a device says about itself is kept folded: the state and controls come first.
  if (name === "basicInformation") return h("details", { class: "trait", "data-trait": name, "data-form": "informati\##
on" }, h("summary", {}, S.information), attrs, cmds, forms, more);
  return h("div", { class: "trait", "data-trait": name }, title, attrs, cmds, forms, more);
}

function input(f, admin) {
  const common = { name: f.name, disabled: !admin, "aria-label": words(f.name) };
  if (f.kind === "bool") return h("input", Object.assign({ type: "checkbox", checked: f.value === true }, common));
  if (f.kind === "enum") return h("select", common, (f.nullable ? [""] : []).concat(f.cases).map((c) => h("option"\##
, { value: c, selected: c === f.value }, c ? words(c) : S.null)));
  if (f.kind === "int") return h("input", Object.assign({ type: "number", min: f.min, max: f.max, step: 1, value: f.\##
value == null ? "" : f.value, placeholder: f.min + "–" + f.max }, common));
  return h("input", Object.assign({ value: f.value == null ? "" : f.value, maxlength: f.maxLength }, common));
}

function drawForm(d, key, title, fields, go) {
  const admin = role === "admin";
  const inputs = fields.map((f) => [f, input(f, admin)]);
  const read = () => {
    const out = {};
    for (const [f, e] of inputs) {
      if (f.kind === "bool") out[f.name] = e.checked;
      else if (e.value === "") { if (f.nullable) out[f.name] = null; }
      else out[f.name] = f.kind === "int" ? Number(e.value) : e.value;
    }
    return out;
  };
  return h("details", { "data-form": key }, h("summary", {}, title),
    h("div", { class: "row" }, inputs.map(([f, e]) => h("label", {}, words(f.name) + (f.kind === "int" ? " (" + f.mi\##
n + "–" + f.max + ")" : ""), e)),
      h("button", { type: "button", disabled: !admin, onclick: () => go(read()) }, S.send)));
}

function drawRename(d) {
  const admin = role === "admin";
  const name = h("input", { value: d.name, maxlength: 60, disabled: !admin, "aria-label": S.name });
  const room = h("input", { value: d.roomId || "", disabled: !admin, "aria-label": S.room });
  return h("details", { "data-form": "rename" }, h("summary", {}, S.rename), h("div", { class: "row" },
    h("label", {}, S.name, name), h("button", { type: "button", disabled: !admin, onclick: () => send(d, { setName\##
: name.value }) }, S.set),
    h("label", {}, S.room, room), h("button", { type: "button", disabled: !admin, onclick: () => send(d, { setRoom\##
: room.value || null }) }, S.set)));
}

async function send(d, request) {
  const card = document.getElementById("card-" + key(d)), error = card && card.querySelector(".error");
  if (error) error.textContent = "";
  const r = await api("/api/devices/" + encodeURIComponent(d.id) + "/request", request);
  if (r.ok) return;
  const e = r.error || {};
  const text = e.status === "busy" ? S.busy : S.failed + ": " + (e.message || r.httpStatus);
  const again = document.getElementById("card-" + key(d)), where = again && again.querySelector(".error");
  if (where) where.textContent = text;
}

// Groups: this hub's memberships (GET /api/groups, as on <prefix>/<hub>/groups), one card per group.
async function loadGroups() {
  const r = await api("/api/groups");
  if (Array.isArray(r)) { groups = r; drawGroups(); }
}

function deviceName(id, hub) { const d = home.find((x) => x.id === id && (x.hub || hubID) === (hub || hubID)); retur\##
n d ? d.name || d.id : id; }

function drawGroups() {
  const by = new Map();
  for (const m of groups) {
    if (!by.has(m.group)) by.set(m.group, { id: m.group, name: "", members: [], scenes: new Map() });
    const g = by.get(m.group);
    if (!g.name && m.name) g.name = m.name;
    if (!g.members.includes(m.device)) g.members.push(m.device);
    for (const sc of m.scenes || []) if (!g.scenes.has(sc.scene)) g.scenes.set(sc.scene, sc);
  }
  const root = $("groups"), admin = role === "admin";
  if (!by.size) return root.replaceChildren();
  root.replaceChildren(h("h3", {}, S.groups), h("div", { class: "grid" }, [...by.values()].map((g) => {
    const old = document.getElementById("group-" + g.id), answer = old ? old.querySelector(".answer").cloneNode(true\##
) : h("div", { class: "answer", role: "status" });
    const button = (text, attrs, request) => h("button", Object.assign({ type: "button", disabled: !admin, onclick\##
: () => sendGroup(g.id, request) }, attrs), text);
    return h("article", { class: "card", id: "group-" + g.id, "data-group": g.id },
      h("div", { class: "head" }, h("span", { class: "name" }, g.name || S.group + " " + g.id), h("span", { class: "\##
src" }, S.group + " " + g.id)),
      h("p", { class: "hint" }, S.members + ": " + g.members.map((x) => deviceName(x)).join(", ")),
      h("div", { class: "cmds" }, [["on", S.groupOn], ["off", S.groupOff], ["toggle", S.groupToggle]].map(([c, text]) =>
        button(text, { "data-group-command": c }, { trait: "onOff", command: c }))),
      g.scenes.size ? h("div", { class: "cmds" }, h("span", { class: "tname" }, S.scenes + ":"), [...g.scenes.values\##
()].map((sc) =>
        button(sc.name || "#" + sc.scene, { "data-scene": sc.scene }, { trait: "scenesManagement", command: "recallS\##
cene", args: { sceneId: sc.scene } }))) : null,
      answer);
  })));
}

// One send for the whole group on every hub; each hub's summary says where it ran and who refused, and why.
async function sendGroup(id, request) {
  const where = () => document.querySelector("#group-" + id + " .answer");
  const transaction = "page-" + Date.now() + "-" + ++sent;
  if (where()) where().replaceChildren(S.sending);
  const r = await api("/api/groups/" + id + "/request", Object.assign({ transaction }, request));
  const lines = [];
  if (r.error) lines.push(h("p", { class: "error" }, (r.hub ? r.hub + ": " : "") + S.failed + ": " + (r.error.messag\##
e || r.httpStatus)));
  for (const a of r.hubs || []) {
    if (a.answered === false) { lines.push(h("p", { class: "error", "data-hub": a.hub }, a.hub + ": " + S.notAnswere\##
d)); continue; }
    lines.push(h("p", { "data-hub": a.hub }, a.hub + ": " + (a.ran && a.ran.length ? S.ran + " " + a.ran.map((x) =\##
> deviceName(x, a.hub)).join(", ") : S.ranNothing)));
    for (const x of a.refused || []) lines.push(h("p", { class: "error", "data-refused": x.device }, a.hub + "\##
: " + S.refusedBy + " " + deviceName(x.device, a.hub) + ": " +
      (x.error.status === "busy" ? S.busy : x.error.message)));
  }
  if (where()) where().replaceChildren(...lines);
  loadGroups();  // a scene stored or a membership changed shows at once
}

document.addEventListener("focusout", () => setTimeout(() => {
  for (const k of [...pending]) { pending.delete(k); const [hub, ...id] = k.split("/"); drawDevice(id.join("/"), hu\##
b === hubID ? undefined : hub); }
}, 0));

$("login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  const setup = $("login").dataset.setup === "1";
  const r = setup ? await api("/api/setup", { code: $("code").value, password: $("password").value })
    : await api("/api/login", { user: $("user").value, password: $("password").value });
  $("password").value = "";
  if (!r.ok) { $("login-error").textContent = S.wrong + ": " + ((r.error || {}).message || r.httpStatus); return; }
  start();
});
$("logout").addEventListener("click", async () => { await api("/api/logout", {}); if (source) source.close(); sourc\##
e = null; docs.clear(); home = []; groups = []; $("rooms").replaceChildren(); $("groups").replaceChildren(); banner(\##
); start(); });
$("password-open").addEventListener("click", () => show("password-form"));
$("password-close").addEventListener("click", () => show("home"));
$("users-close").addEventListener("click", () => show("home"));
$("password-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const r = await api("/api/password", { current: $("current").value, new: $("new").value });
  $("current").value = $("new").value = "";
  $("password-error").textContent = r.ok ? S.passwordChanged : ((r.error || {}).message || r.httpStatus);
});
async function drawUsers() {
  const r = await api("/api/users");
  $("users").replaceChildren(...(r.users || []).filter((u) => u.role === "viewer").map((u) => h("li", {}, u.name + " ",
    h("button", { type: "button", class: "ghost", onclick: async () => { await api("/api/users/" + encodeURIComponen\##
t(u.name), undefined, "DELETE"); drawUsers(); } }, S.remove))));
}
$("users-open").addEventListener("click", () => { show("users-form"); drawUsers(); });
$("users-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const r = await api("/api/users", { name: $("viewer-name").value, password: $("viewer-password").value });
  $("users-error").textContent = r.ok ? "" : ((r.error || {}).message || r.httpStatus);
  if (r.ok) { $("viewer-name").value = $("viewer-password").value = ""; drawUsers(); }
});

// ---- Administration (admin only; /api/admin/…). A panel is one adminPanel({ id, title, draw(root), event }) call:
// a tab and a body; draw runs each time the tab is opened, event(name, data) gets the live stream's admin events.
const adminPanels = [];
let adminOpen = null;
function adminPanel(p) { adminPanels.push(p); }

function drawAdminTabs() {
  $("admin-tabs").replaceChildren(...adminPanels.map((p) => h("button", { type: "button", role: "tab", class: adminO\##
pen === p.id ? "" : "ghost",
    id: "tab-" + p.id, "aria-selected": adminOpen === p.id ? "true" : "false", onclick: () => openAdmin(p.id) }, S[p\##
.title] || p.title)));
}

async function openAdmin(id) {
  adminOpen = id || adminOpen || adminPanels[0].id;
  show("admin");
  drawAdminTabs();
  const p = adminPanels.find((x) => x.id === adminOpen), root = h("div", { class: "admin-panel", id: "admin-" + p.id });
  $("admin-panels").replaceChildren(root);
  await p.draw(root);
}

// The admin's API: a session that ended (the hub restarted, the password changed) goes back to signing in.
async function adminApi(path, body, method) {
  const r = await api(path, body, method);
  if (r.httpStatus === 401) start();
  return r;
}

function adminStream(es) {
  es.addEventListener("log", (e) => { for (const p of adminPanels) if (p.event) p.event("log", JSON.parse(e.data)); });
}

function adminReconnected() { for (const p of adminPanels) if (p.reconnected) p.reconnected(); }

$("admin-open").addEventListener("click", () => openAdmin());
$("admin-close").addEventListener("click", () => show("home"));

// Configuration: the text as the hub runs it, in an editor with line numbers; each problem at its line and column.
const config = { saved: null, waiting: false };
adminPanel({
  id: "config", title: "configuration",
  async draw(root) {
    const r = await adminApi("/api/admin/config");
    if (!r.ok) return root.replaceChildren(h("p", { class: "error" }, (r.error || {}).message || r.httpStatus));
    const text = h("textarea", { id: "config-text", spellcheck: "false", wrap: "off", "aria-label": S.configuration });
    text.value = r.text;
    const gutter = h("pre", { class: "gutter", id: "config-gutter", "aria-hidden": "true" });
    const numbers = () => { const n = text.value.split("\n").length, bad = config.marks || new Map();
      gutter.replaceChildren(...Array.from({ length: n }, (_, i) => h("span", bad.has(i + 1) ? { class: "bad", title\##
: bad.get(i + 1) } : {}, String(i + 1) + "\n"))); };
    text.addEventListener("input", () => { config.marks = null; numbers(); });
    text.addEventListener("scroll", () => { gutter.scrollTop = text.scrollTop; });
    const out = h("div", { id: "config-result", role: "status" });
    const go = (save) => async () => {
      config.waiting = false;
      out.replaceChildren(h("p", { class: "hint" }, S.checking));
      const a = await adminApi(save ? "/api/admin/config" : "/api/admin/config/check", { text: text.value });
      showProblems(a, text, out, numbers, save);
    };
    root.replaceChildren(h("p", { class: "hint" }, S.configHint), h("p", { class: "hint", id: "config-file" }, r.file),
      h("div", { class: "editor" }, gutter, text),
      h("div", { class: "cmds" }, h("button", { type: "button", id: "config-check", class: "ghost", onclick: go(fals\##
e) }, S.check),
        h("button", { type: "button", id: "config-save", onclick: go(true) }, S.saveApply)), out);
    config.marks = null;
    numbers();
    // Said until the next check or save: the text the hub came back with is the one saved.
    if (config.waiting && config.saved === r.text) out.replaceChildren(h("p", { class: "note", id: "config-applied\##
" }, S.restarted));
  },
  reconnected() { if (config.waiting && adminOpen === "config" && !$("admin").hidden) openAdmin("config"); },
});

function showProblems(a, text, out, numbers, save) {
  const where = (p) => S.line + " " + p.line + (p.column ? ", " + S.column + " " + p.column : "") + (p.pat\##
h ? " · " + p.path : "");
  const item = (p, cls) => h("li", { class: cls, "data-line": p.line, "data-column": p.column, onclick: () => select\##
(text, p.line, p.column) }, where(p) + ": " + p.message);
  const problems = a.problems || [], warnings = a.warnings || [];
  config.marks = new Map(problems.filter((p) => p.line > 0).map((p) => [p.line, p.message]));
  numbers();
  if (!a.ok && !problems.length) return out.replaceChildren(h("p", { class: "error" }, (a.error || {}).message || a.\##
httpStatus));
  const kids = [];
  if (problems.length) kids.push(h("p", { class: "error" }, problems.length + " " + S.problems), h("ol", { class: "p\##
roblems", id: "config-problems" }, problems.map((p) => item(p, "error"))));
  else if (save && a.restarting) { config.saved = text.value; config.waiting = true; kids.push(h("p", { class: "note\##
", id: "config-restarting" }, S.restarting.replace("{file}", a.saved))); }
  else kids.push(h("p", { class: "hint", id: "config-ok" }, S.checkedOK));
  if (warnings.length) kids.push(h("p", { class: "hint" }, warnings.length + " " + S.warnings), h("ol", { class: "pr\##
oblems" }, warnings.map((p) => item(p, "note"))));
  out.replaceChildren(...kids);
  if (problems.length && problems[0].line > 0) select(text, problems[0].line, problems[0].column);
}

// Puts the cursor at a line and column (1-based) and scrolls it into view.
function select(text, line, column) {
  const lines = text.value.split("\n"), l = Math.min(Math.max(line, 1), lines.length);
  let at = 0;
  for (let i = 0; i < l - 1; i++) at += lines[i].length + 1;
  at += Math.min(Math.max((column || 1) - 1, 0), lines[l - 1].length);
  text.focus();
  text.setSelectionRange(at, Math.min(at + Math.max(1, (lines[l - 1].length - (column || 1) + 1)), at + lines[l - 1]\##
.length));
  const height = text.scrollHeight / lines.length;
  text.scrollTop = Math.max(0, (l - 4) * height);
}

// Wiring: check-config's summary, each device's types with the hardware they use.
adminPanel({
  id: "wiring", title: "wiring",
  async draw(root) {
    const r = await adminApi("/api/admin/wiring");
    if (!r.ok) return root.replaceChildren(h("p", { class: "error" }, (r.error || {}).message || r.httpStatus));
    const head = [], rows = [], tail = [];
    let inDevices = false, done = false;
    for (const line of r.summary) {
      if (!done && inDevices && line.startsWith("  ")) {
        const m = line.trim().match(/^(\S+)\s+(.*)$/);
        // Types are split by "; ", and so are the parts of one binding (a plug's relay; its meter): a part without "←"
        // belongs to the type before it.
        const types = [];
        for (const part of m ? m[2].split("; ") : []) {
          const at = part.indexOf(" ← ");
          if (at < 0 && types.length) types[types.length - 1][1] += "; " + part;
          else types.push(at < 0 ? [part, ""] : [part.slice(0, at), part.slice(at + 3)]);
        }
        types.forEach(([type, hw], i) => rows.push(h("tr", { "data-device": m[1] }, h("td", {}, i ? "" : m[1]), h("t\##
d", {}, type), h("td", { class: "wire" }, hw))));
        continue;
      }
      if (inDevices) done = true;
      if (/device\(s\):$/.test(line)) { inDevices = true; head.push(h("p", {}, line)); continue; }
      (done ? tail : head).push(h("p", {}, line));
    }
    root.replaceChildren(h("p", { class: "hint" }, S.wiringHint), ...head,
      h("table", { class: "wiring", id: "wiring-table" }, h("thead", {}, h("tr", {}, h("th", {}, S.device), h("th"\##
, {}, S.type), h("th", {}, S.hardware))), h("tbody", {}, rows)), ...tail);
  },
});

// Logs: the recent lines, a level filter, new lines live from the event stream.
const logView = { lines: [], level: "info", order: ["trace", "debug", "info", "notice", "warning", "error", "critica\##
l"] };
adminPanel({
  id: "logs", title: "logs",
  async draw(root) {
    const select = h("select", { id: "log-level", "aria-label": S.level, onchange: () => { logView.level = select.va\##
lue; drawLogs(); } },
      logView.order.map((l) => h("option", { value: l, selected: l === logView.level }, S.levels[l])));
    root.replaceChildren(h("p", { class: "hint" }, S.logsHint), h("label", { class: "inline" }, S.level, select), h(\##
"ol", { class: "log", id: "log-lines" }));
    const r = await adminApi("/api/admin/logs");
    if (!r.ok) return root.append(h("p", { class: "error" }, (r.error || {}).message || r.httpStatus));
    logView.lines = r.lines.concat(logView.lines.filter((l) => l.seq > r.newest)).slice(-1000);
    drawLogs();
  },
  event(name, line) {
    if (name !== "log" || logView.lines.some((l) => l.seq === line.seq)) return;
    logView.lines.push(line);
    if (logView.lines.length > 1000) logView.lines.shift();
    const list = $("log-lines");
    if (list && !$("admin").hidden && adminOpen === "logs" && shown(line)) { const stick = list.scrollTop + list.cli\##
entHeight >= list.scrollHeight - 4; list.append(logItem(line)); if (stick) list.scrollTop = list.scrollHeight; }
  },
});

function shown(line) { return logView.order.indexOf(line.level) >= logView.order.indexOf(logView.level); }
function logItem(l) { return h("li", { class: "lv-" + l.level, "data-seq": l.seq }, h("time", {}, l.time.slice(11, 2\##
3)), h("span", { class: "lv" }, l.level), h("span", { class: "msg" }, l.text)); }
function drawLogs() {
  const list = $("log-lines");
  if (!list) return;
  list.replaceChildren(...logView.lines.filter(shown).map(logItem));
  list.scrollTop = list.scrollHeight;
}

// Backup and restore: the archive is a download; a restore uploads it as application/x-tar, and the hub answers with
// the configuration's problems, if any, each at its line and column.
adminPanel({
  id: "backup", title: "backup",
  draw(root) {
    const file = h("input", { id: "restore-file", type: "file", accept: ".tar,application/x-tar", "aria-label": S.ch\##
ooseFile });
    const out = h("div", { id: "restore-result", role: "status" });
    const go = async () => {
      if (!file.files[0]) return;
      out.replaceChildren(S.restoring);
      let j = {}, status = 0;
      try {
        const r = await fetch("/api/restore", { method: "POST", credentials: "same-origin", headers: { "Content-Type\##
": "application/x-tar" }, body: file.files[0] });
        status = r.status;
        j = await r.json();
      } catch (e) { j = { ok: false, error: { message: String(e) } }; }
      if (j.ok) return out.replaceChildren(h("p", { class: "note", "data-restored": "1" }, j.restarting ? S.restore\##
d : S.restoredNoRestart));
      out.replaceChildren(h("p", { class: "error" }, S.restoreFailed + ": " + (((j.problems || []).length ? "" : (j.\##
error || {}).message) || status)),
        h("ul", {}, (j.problems || []).map((p) => h("li", { class: "error", "data-line": p.line, "data-column": p.co\##
lumn }, p.file + ":" + p.line + ":" + p.column + ": " + (p.path ? p.path + ": " : "") + p.message))));
    };
    root.replaceChildren(h("p", { class: "hint", id: "backup-hint" }, S.backupHint),
      h("p", {}, h("a", { id: "backup-download", href: "/api/backup", download: true }, S.download)),
      h("p", { class: "hint" }, S.restoreHint), h("label", {}, S.chooseFile, file),
      h("div", { class: "cmds" }, h("button", { type: "button", id: "restore-go", onclick: go }, S.restore)), out);
  },
});
// Matter: the codes while the hub can be commissioned, its fabrics, a window for another ecosystem, a fabric removed
// after a confirmation. The codes come only in these answers, for the admin.
const matterView = { timer: null, deadline: 0 };
function matterError(r) { return h("p", { class: "error", role: "alert" }, (r.error || {}).message || r.httpStatus); }
function matterCodes(c) {
  return h("div", { class: "matter-codes" },
    c.svg ? h("img", { id: "matter-qr", alt: S.matterQR + " " + c.qr, width: 200, height: 200, src: "data:image/svg+\##
xml," + encodeURIComponent(c.svg) }) : null,
    h("div", {}, h("p", {}, S.matterManual + ": ", h("strong", { id: "matter-manual" }, c.manual)),
      h("p", { class: "hint" }, S.matterQR + ": ", h("code", { id: "matter-qr-text" }, c.qr))));
}
function matterCountdown(window) {
  clearInterval(matterView.timer);
  matterView.timer = null;
  const out = h("p", { class: "note", id: "matter-remaining" });
  matterView.deadline = Date.now() + window.remainingSeconds * 1000;
  const tick = () => {
    const left = Math.max(0, Math.ceil((matterView.deadline - Date.now()) / 1000));
    if (matterView.timer && !document.body.contains(out)) { clearInterval(matterView.timer); return; }
    out.textContent = left > 0 ? S.matterCloses + " " + Math.floor(left / 60) + ":" + String(left % 60).padStart(2\##
, "0") : S.matterClosed;
    if (left === 0) clearInterval(matterView.timer);
  };
  tick();
  matterView.timer = setInterval(tick, 1000);
  return out;
}
adminPanel({
  id: "matter", title: "matter",
  async draw(root) {
    clearInterval(matterView.timer);
    const r = await adminApi("/api/admin/matter");
    if (!r.ok) return root.replaceChildren(matterError(r));
    if (!r.enabled) return root.replaceChildren(h("p", { class: "note", id: "matter-off" }, S.matterOff), h("p", { c\##
lass: "hint" }, S.matterOn));
    const kids = [];
    if (r.commissionable) {
      const here = !!r.codes;
      kids.push(h("p", { class: "hint", id: "matter-commissionable" }, !r.window ? S.matterPair : here ? S.matterWin\##
dowHere : S.matterWindowElsewhere));
      if (r.codes) kids.push(matterCodes(r.codes));
      if (r.window) kids.push(matterCountdown(r.window));
    }
    const out = h("div", { id: "matter-result", role: "status" });
    if (r.commissioned && !r.window) kids.push(h("div", { class: "cmds" }, h("button", { type: "button", id: "matter\##
-open", onclick: async (ev) => {
      ev.target.disabled = true;
      out.replaceChildren(h("p", { class: "hint" }, S.matterOpening));
      const a = await adminApi("/api/admin/matter/window", {});
      if (!a.ok) { ev.target.disabled = false; return out.replaceChildren(matterError(a)); }
      openAdmin("matter");
    } }, S.matterOpen)));
    kids.push(out, h("h3", {}, S.matterFabrics));
    if (!r.fabrics.length) kids.push(h("p", { class: "hint", id: "matter-no-fabrics" }, S.matterNoFabrics));
    else kids.push(h("table", { class: "wiring", id: "matter-fabrics" },
      h("thead", {}, h("tr", {}, [S.matterIndex, S.matterLabel, S.matterVendor, S.matterFabricId, S.matterNodeId, ""\##
].map((t) => h("th", {}, t)))),
      h("tbody", {}, r.fabrics.map((f) => matterFabricRow(f, out)))));
    root.replaceChildren(...kids);
  },
});
function matterFabricRow(f, out) {
  const cell = h("td", {});
  const ask = () => cell.replaceChildren(h("span", { class: "note" }, S.matterRemoveAsk.replace("{index}", f.inde\##
x + (f.label ? " (" + f.label + ")" : ""))),
    h("button", { type: "button", class: "danger", "data-confirm-remove": f.index, onclick: async () => {
      const a = await adminApi("/api/admin/matter/fabrics/" + f.index, undefined, "DELETE");
      if (!a.ok) return out.replaceChildren(matterError(a));
      openAdmin("matter");
    } }, S.matterRemoveYes),
    h("button", { type: "button", class: "ghost", onclick: idle }, S.cancel));
  const idle = () => cell.replaceChildren(h("button", { type: "button", class: "ghost", "data-remove": f.index, oncl\##
ick: ask }, S.remove));
  idle();
  return h("tr", { "data-fabric": f.index }, h("td", {}, String(f.index)), h("td", {}, f.label || "—"), h("td", { cl\##
ass: "wire" }, f.vendorId),
    h("td", { class: "wire" }, f.fabricId), h("td", { class: "wire" }, f.nodeId), cell);
}
start();
"""##

    static let germanJS = ##"""
// The page's string catalogue in German: the same keys as S in app.js, which uses it when the hub served the page
// as German (chosen from the browser's Accept-Language). The browser suite checks that no key is missing.
"use strict";
const DE = {
  signIn: "Anmelden", setUp: "Admin-Passwort festlegen", setUpHint: "Der Hub hat einen einmaligen Einrichtungscode a\##
uf seiner Konsole und in seinem Journal ausgegeben; `hearthd web setup-code` auf dem Hub gibt ihn erneut aus.",
  code: "Einrichtungscode", user: "Benutzer", password: "Passwort", newPassword: "Neues Passwort (mindestens 10 Zeic\##
hen)", currentPassword: "Aktuelles Passwort",
  logout: "Abmelden", changePassword: "Passwort", users: "Betrachter", addViewer: "Betrachter hinzufügen", viewerNam\##
e: "Name des Betrachters", viewerPassword: "Passwort des Betrachters",
  save: "Speichern", close: "Schließen", remove: "Entfernen", brokerUp: "Broker verbunden", brokerDown: "Broker getr\##
ennt",
  brokerDownBanner: "Der Hub hat seinen MQTT-Broker verloren: Diese Seite funktioniert weiter, aber andere Clients u\##
nd Hubs sehen Änderungen erst, wenn er zurück ist.",
  streamLost: "Live-Aktualisierung unterbrochen; verbinde neu…", noRoom: "Kein Raum", peers: "Hubs", thisHub: "diese\##
r Hub",
  online: "online", offline: "offline", unknown: "unbekannt", direct: "direkt", localPeer: "Nachbar-Hub", remote: "e\##
ntfernter Hub", mixed: "gemischt", unspecified: "—",
  rename: "Name und Raum", name: "Name", room: "Raum (leer: keiner)", send: "Senden", set: "Setzen", busy: "Das Gerä\##
t ist beschäftigt: Bitte gleich noch einmal versuchen.",
  viewer: "Betrachter: Sie sehen das Zuhause, können es aber nicht ändern.", peerDevice: "So gezeigt, wie sein Hub e\##
s zusammenfasst; öffnen Sie die Seite jenes Hubs, um es zu steuern.",
  failed: "Abgelehnt", information: "Geräteinformationen", wrong: "Anmeldung fehlgeschlagen", null: "keiner", passwo\##
rdChanged: "Passwort geändert.",
  groups: "Gruppen", group: "Gruppe", members: "Mitglieder", groupOn: "Ein", groupOff: "Aus", groupToggle: "Umschalt\##
en", scenes: "Szenen",
  ran: "ausgeführt auf", ranNothing: "auf keinem Gerät ausgeführt", notAnswered: "hat nicht rechtzeitig geantworte\##
t (vielleicht ausgeführt)", refusedBy: "abgelehnt von", sending: "Sende…", yes: "ja", no: "nein",
  admin: "Verwaltung", configuration: "Konfiguration", wiring: "Verdrahtung", logs: "Protokoll",
  check: "Prüfen", saveApply: "Speichern und anwenden", checking: "Prüfe…", checkedOK: "Keine Probleme: Diese Konfig\##
uration kann angewendet werden.",
  problems: "Problem(e): Nichts wurde gespeichert.", warnings: "Warnung(en)", line: "Zeile", column: "Spalte",
  restarting: "In {file} gespeichert. Der Hub startet damit neu…", restarted: "Der Hub läuft wieder, mit der neuen K\##
onfiguration.",
  configHint: "Die Konfiguration, wie der Hub sie ausführt. Werte aus secrets.yaml stehen als `!secret NAME` da un\##
d werden nie gezeigt. Ein Speichern wird geprüft wie von `hearthd check-config`; nur eine Konfiguration ohne Problem\##
e wird geschrieben, dann startet der Hub neu, um sie anzuwenden.",
  wiringHint: "Was jedes Gerät auf dem Board benutzt, wie `hearthd check-config` es auflistet.",
  device: "Gerät", type: "Typ", hardware: "Hardware", level: "Stufe",
  logsHint: "Die letzten Zeilen des Hubs, die neueste zuletzt, live. Geheimnisse werden nie gezeigt.",
  levels: { trace: "Ablauf", debug: "Fehlersuche", info: "Info", notice: "Hinweis", warning: "Warnung", error: "Fehl\##
er", critical: "Kritisch" },
  backup: "Sicherung",
  backupHint: "Eine Sicherung enthält die Konfiguration (ohne Benutzername und Passwort des Brokers und ohne secrets\##
.yaml), die Board-Datei und den Zustand: den Zustand, die Namen und Räume jedes Geräts und den Matter-Speicher (Fabr\##
ics, Schlüssel, Endpunktnummern), sodass ein daraus wiederhergestellter Hub seine Matter-Kopplungen behält. Die Kont\##
en der Seite sind nicht darin.",
  download: "Sicherung herunterladen", restore: "Diese Sicherung wiederherstellen", restoreHint: "Eine Wiederherstel\##
lung prüft die Konfiguration der Sicherung wie check-config; erst dann wird sie geschrieben, und der Hub startet mi\##
t ihr neu.",
  restoring: "Stelle wieder her…", restored: "Wiederhergestellt: Der Hub startet mit der Sicherung neu.", restoredNo\##
Restart: "Wiederhergestellt: Starten Sie den Hub neu, damit er mit der Sicherung läuft.",
  restoreFailed: "Nicht wiederhergestellt", chooseFile: "Sicherungsdatei (.tar)",
  matter: "Matter",
  matterOff: "Der Matter-Knoten des Hubs ist aus.",
  matterOn: "Zum Einschalten `matter: {enabled: true}` in der Konfiguration setzen (Reiter Konfiguration) und speich\##
ern: Der Hub startet damit neu.",
  matterPair: "Den Hub koppeln: diesen QR-Code in der App des Ökosystems scannen oder den manuellen Code eingeben.",
  matterWindowHere: "Ein Kopplungsfenster für ein weiteres Ökosystem ist offen: mit diesen Codes koppeln.",
  matterWindowElsewhere: "Ein Kopplungsfenster ist offen, von einem anderen Administrator geöffnet: Seine Codes werd\##
en dort gezeigt, wo es geöffnet wurde.",
  matterManual: "Manueller Code", matterQR: "QR-Code", matterCloses: "Schließt in", matterClosed: "Das Fenster ist g\##
eschlossen.",
  matterFabrics: "Fabrics (Ökosysteme, mit denen der Hub gekoppelt ist)", matterNoFabrics: "Der Hub ist noch mit kei\##
nem Ökosystem gekoppelt.",
  matterIndex: "Index", matterLabel: "Bezeichnung", matterVendor: "Hersteller", matterFabricId: "Fabric-ID", matterN\##
odeId: "Knoten-ID",
  matterOpen: "Fenster für ein weiteres Ökosystem öffnen", matterOpening: "Öffne…",
  matterRemoveAsk: "Fabric {index} entfernen? Sein Ökosystem verliert den Hub und seine Geräte; die anderen behalte\##
n sie.",
  matterRemoveYes: "Fabric entfernen", cancel: "Abbrechen",
  names: {
    onOff: "Ein", currentLevel: "Stufe", minLevel: "Niedrigste Stufe", maxLevel: "Höchste Stufe",
    moveToLevel: "Stufe setzen", moveToLevelWithOnOff: "Dimmen", stopWithOnOff: "Anhalten und schalten", stopMoveSte\##
p: "Anhalten",
    transitionTime: "Übergang (0,1 s)", onOffTransitionTime: "Ein/Aus-Übergang (0,1 s)", onTransitionTime: "Einschal\##
t-Übergang (0,1 s)",
    offTransitionTime: "Ausschalt-Übergang (0,1 s)", onLevel: "Stufe beim Einschalten", startUpCurrentLevel: "Stuf\##
e nach Stromausfall",
    startUpOnOff: "Zustand nach Stromausfall", globalSceneControl: "Szene aktiv", onTime: "Ein für (0,1 s)", offWait\##
Time: "Ausschaltwartezeit (0,1 s)",
    offWithEffect: "Aus mit Effekt", onWithTimedOff: "Ein für eine Zeit", onWithRecallGlobalScene: "Ein mit der letz\##
ten Szene",
    identifyTime: "Identifizieren für (s)", identifyType: "Identifizieren durch", measuredValue: "Messwert", minMeas\##
uredValue: "Niedrigster Messwert", maxMeasuredValue: "Höchster Messwert",
    tolerance: "Toleranz", sceneTableSize: "Szenenplätze", fabricSceneInfo: "Gespeicherte Szenen",
    colorTemperatureMireds: "Farbtemperatur (Mired)", currentPosition: "Position",
    numberOfPositions: "Positionen", multiPressMax: "Meiste Tastendrücke", fanMode: "Modus", percentSetting: "Drehza\##
hl (%)",
    percentCurrent: "Drehzahl jetzt (%)", upOrOpen: "Öffnen", downOrClose: "Schließen", stopMotion: "Anhalten",
    goToLiftPercentage: "Fahren auf (%)", currentPositionLiftPercentage: "Offen (%)",
    vendorName: "Hersteller", vendorID: "Hersteller-ID", productName: "Produkt", productID: "Produkt-ID", nodeLabel\##
: "Bezeichnung",
    hardwareVersionString: "Hardware-Version", softwareVersionString: "Software-Version", serialNumber: "Seriennummer",
    uniqueID: "Eindeutige ID", reachable: "Erreichbar", featureMap: "Funktionen", OnOffPlugInUnit: "Steckdose", Gene\##
ricSwitch: "Schalter",
  },
  traits: {
    onOff: "Strom", levelControl: "Helligkeit", relativeHumidityMeasurement: "Luftfeuchte", temperatureMeasurement\##
: "Temperatur",
    scenesManagement: "Szenen", colorControl: "Farbe", fanControl: "Lüfter", windowCovering: "Jalousie", occupancySe\##
nsing: "Anwesenheit",
  },
};
"""##

}
