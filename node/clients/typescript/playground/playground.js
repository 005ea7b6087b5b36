// The playground: simulated players on this gateway's WebSocket (through the SDK), their matches
// with rosters, and the cluster as its nodes' metrics tell it (/cluster).
import { connect } from "/sdk/index.js";

const socketUrl = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
const $ = (selector) => document.querySelector(selector);
const run = Math.random().toString(36).slice(2, 6);
let nextPlayer = 1;
const matches = new Map();  // room ID: { element, heard: Set of users who received the roster }

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, attributes);
  node.append(...children);
  return node;
}

function playerRow(user, type, rating) {
  const state = element("td", { className: "state-waiting", textContent: "connecting" });
  $("#players tbody").prepend(element("tr", { id: `player-${user}` },
    element("td", { textContent: user }), element("td", { textContent: type }),
    element("td", { textContent: rating }), state));
  return (text, kind = "waiting") => {
    state.textContent = text;
    state.className = `state-${kind}`;
  };
}

function showMatch(match, user) {
  let shown = matches.get(match.roomId);
  if (!shown) {
    const rows = match.players.map((player) => element("tr", {},
      element("td", { textContent: player.user }),
      element("td", { textContent: player.values.rating ?? "" }),
      element("td", { textContent: player.side >= 0 ? `side ${player.side + 1}` : "" }),
      element("td", { textContent: `${player.waitMs} ms` })));
    const heard = element("div", { className: "heard" });
    const quality = match.quality ? ` · spread ${match.quality.spread}` : "";
    const card = element("div", { className: "match", id: `room-${match.roomId}` },
      element("div", { className: "title", textContent: `type ${match.ticketType} · room ${match.roomId}${quality}` }),
      element("table", { className: "roster" },
        element("thead", {}, element("tr", {}, ...["player", "rating", "side", "waited"].map((t) => element("th", { textContent: t })))),
        element("tbody", {}, ...rows)),
      heard);
    shown = { card, heard, users: new Set(), size: match.players.length };
    matches.set(match.roomId, shown);
    $("#matches").prepend(card);
    $("#match-count").textContent = String(matches.size);
  }
  shown.users.add(user);
  shown.heard.textContent = `roster received by ${shown.users.size} of ${shown.size} players`;
  if (shown.users.size === shown.size) {
    shown.card.classList.add("complete");
  }
}

async function play(type, rating) {
  const user = `p${nextPlayer++}-${run}`;
  const show = playerRow(user, type, rating);
  let client;
  try {
    client = await connect(socketUrl, { user, reconnect: false });
    show("waiting");
    const match = await client.startTicket(type, { rating });
    show(`matched in room ${match.roomId}`, "matched");
    showMatch(match, user);
  } catch (error) {
    show(error.category ?? error.reason ?? error.message, "failed");
  } finally {
    client?.close();
  }
}

$("#start").addEventListener("submit", (event) => {
  event.preventDefault();
  const type = Number($("#type").value || 1);
  const count = Math.min(200, Math.max(1, Number($("#count").value)));
  const mean = Number($("#rating").value);
  const spread = Number($("#spread").value);
  for (let i = 0; i < count; ++i) {
    void play(type, Math.round(mean + (Math.random() * 2 - 1) * spread));
  }
});

// Prometheus text, node by node: { node: { "name{labels}": value } }.
function parseCluster(text) {
  const nodes = [];
  let current = null;
  for (const line of text.split("\n")) {
    const header = line.match(/^# node (\S+)/);
    if (header) {
      current = { address: header[1], up: true, samples: [] };
      nodes.push(current);
    } else if (line.startsWith("# unreachable") && current) {
      current.up = false;
    } else if (current && line && !line.startsWith("#")) {
      const sample = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/);
      if (sample) {
        const labels = Object.fromEntries([...(sample[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
        current.samples.push({ name: sample[1], labels, value: Number(sample[3]) });
      }
    }
  }
  return nodes;
}

function sum(nodes, name, match = () => true) {
  let total = 0;
  for (const node of nodes) {
    for (const sample of node.samples) {
      if (sample.name === name && match(sample.labels)) total += sample.value;
    }
  }
  return total;
}

function showCluster(nodes) {
  $("#nodes").replaceChildren(...nodes.map((node) => {
    const members = sum([node], "matchmesh_members_alive");
    const sessions = sum([node], "matchmesh_client_sessions");
    return element("span", {
      className: node.up ? "node" : "node down",
      textContent: node.up ? `${node.address} · sees ${members} members · ${sessions} sessions` : `${node.address} · unreachable`,
    });
  }));
  const types = [...new Set(nodes.flatMap((node) => node.samples
    .filter((s) => s.name === "matchmesh_tickets").map((s) => s.labels.ticket_type)))].sort();
  const select = $("#type");
  if (select.options.length !== types.length) {
    const chosen = select.value || "1";
    select.replaceChildren(...types.map((type) => element("option", { value: type, textContent: type })));
    select.value = types.includes(chosen) ? chosen : types[0] ?? "";
  }
  $("#waiting tbody").replaceChildren(...types.map((type) => element("tr", {},
    element("td", { textContent: type }),
    element("td", { textContent: sum(nodes, "matchmesh_tickets", (l) => l.ticket_type === type && l.phase === "waiting") }),
    element("td", { textContent: sum(nodes, "matchmesh_tickets", (l) => l.ticket_type === type && l.phase === "searching") }),
    element("td", { textContent: sum(nodes, "matchmesh_time_to_match_seconds_count", (l) => l.ticket_type === type) }))));
  // Time to match over every type: the cumulative buckets summed over nodes, shown per bucket.
  const bounds = [...new Set(nodes.flatMap((node) => node.samples
    .filter((s) => s.name === "matchmesh_time_to_match_seconds_bucket").map((s) => s.labels.le)))]
    .sort((a, b) => (a === "+Inf" ? 1 : b === "+Inf" ? -1 : Number(a) - Number(b)));
  let below = 0;
  const counts = bounds.map((le) => {
    const cumulative = sum(nodes, "matchmesh_time_to_match_seconds_bucket", (l) => l.le === le);
    const count = cumulative - below;
    below = cumulative;
    return { le, count };
  });
  const most = Math.max(1, ...counts.map((c) => c.count));
  $("#histogram").replaceChildren(...counts.map(({ le, count }) => element("div", { className: "bar" },
    element("span", { textContent: le === "+Inf" ? "more" : `≤ ${Number(le) < 1 ? `${Number(le) * 1000} ms` : `${le} s`}` }),
    element("div", { style: `width: ${Math.round((count / most) * 160)}px` }),
    element("span", { textContent: count }))));
  $("#cluster-status").textContent = `${nodes.length} nodes, read ${new Date().toLocaleTimeString()}`;
}

async function poll() {
  try {
    const response = await fetch("/cluster", { cache: "no-store" });
    showCluster(parseCluster(await response.text()));
  } catch (error) {
    $("#cluster-status").textContent = `cannot read the cluster: ${error.message}`;
  }
  setTimeout(poll, 1000);
}
void poll();
