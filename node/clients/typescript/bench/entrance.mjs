// What the WebSocket entrance costs against the client port: one node and one gateway in front
// of it; the same client program (this one) sends the same commands at the same rate over both,
// each connection waiting for the reply before its next command, and measures the round trips;
// the node's and the gateway's CPU time over each phase gives the CPU per command.
//
//   MATCHMESH_BIN_DIR=build/release/bin node bench/entrance.mjs [--connections 40]
//       [--rate 2000] [--seconds 5] [--json FILE]
//
// The command is a startTicket of a ticket type the node does not have: decoded, checked and
// answered (unknown_ticket_type) without changing anything, so that both paths do the same work
// each time. The rate stays under the sessions' command limit (100/s each).
import { readFileSync, writeFileSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { parseArgs } from "node:util";

import * as capnp from "capnp-es";
import { WebSocket } from "ws";

import { Request, ServerMessage } from "../dist/generated/client.js";
import { startCluster } from "../testing/cluster.mjs";

const { values: options } = parseArgs({
  options: {
    connections: { type: "string", default: "40" },
    rate: { type: "string", default: "2000" },
    seconds: { type: "string", default: "5" },
    json: { type: "string" },
  },
});
const connections = Number(options.connections);
const rate = Number(options.rate);
const seconds = Number(options.seconds);
if (rate / connections > 90) {
  throw new Error(`--rate ${rate} over ${connections} connections exceeds a session's 100 commands/s`);
}

function encode(fill) {
  const message = new capnp.Message();
  const request = message.initRoot(Request);
  fill(request);
  return new Uint8Array(message.toArrayBuffer());
}

const helloOf = (user) => encode((request) => {
  request.id = 1n;
  request._initHello().userId = user;
});
const command = (id) => encode((request) => {
  request.id = BigInt(id);
  const start = request._initStartTicket();
  start.ticketType = 250;
  const values = start._initValues(1);
  values.get(0).name = "rating";
  values.get(0).value = 1500n;
});

// A connection over the client port: 8-byte header (u32 length, u16 version 1, u16 0) + body.
function tcpClient(address) {
  const [host, port] = [address.slice(0, address.lastIndexOf(":")), Number(address.slice(address.lastIndexOf(":") + 1))];
  const socket = connectTcp(port, host);
  socket.setNoDelay(true);
  let buffered = Buffer.alloc(0);
  let waiting = null;
  socket.on("data", (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 8) {
      const length = buffered.readUInt32LE(0);
      if (buffered.length < 8 + length) break;
      const body = buffered.subarray(8, 8 + length);
      buffered = buffered.subarray(8 + length);
      const resolve = waiting;
      waiting = null;
      resolve?.(body);
    }
  });
  return {
    ready: new Promise((resolve, reject) => { socket.once("connect", resolve); socket.once("error", reject); }),
    call(bytes) {
      return new Promise((resolve) => {
        waiting = resolve;
        const header = Buffer.alloc(8);
        header.writeUInt32LE(bytes.byteLength, 0);
        header.writeUInt16LE(1, 4);
        socket.write(Buffer.concat([header, bytes]));
      });
    },
    close: () => socket.destroy(),
  };
}

function webSocketClient(url) {
  const socket = new WebSocket(url);
  socket.binaryType = "nodebuffer";
  let waiting = null;
  socket.on("message", (data) => {
    const resolve = waiting;
    waiting = null;
    resolve?.(data);
  });
  return {
    ready: new Promise((resolve, reject) => { socket.once("open", resolve); socket.once("error", reject); }),
    call(bytes) {
      return new Promise((resolve) => {
        waiting = resolve;
        socket.send(bytes);
      });
    },
    close: () => socket.close(),
  };
}

function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;  // utime + stime, in clock ticks
}

function percentile(sorted, p) {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function phase(name, open, pids) {
  const clients = Array.from({ length: connections }, (_, index) => ({ client: open(), user: `${name}-${index}` }));
  await Promise.all(clients.map(({ client }) => client.ready));
  await Promise.all(clients.map(({ client, user }) => client.call(helloOf(user))));
  const before = pids.map(cpuSeconds);
  const began = performance.now();
  const end = began + seconds * 1000;
  const interval = (connections / rate) * 1000;  // each connection's pace
  const trips = [];
  let answered = 0;
  await Promise.all(clients.map(async ({ client }, index) => {
    let due = began + (index / connections) * interval;
    for (let id = 2; due < end; ++id, due += interval) {
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const sent = performance.now();
      const reply = await client.call(command(id));
      trips.push(performance.now() - sent);
      const message = new capnp.Message(reply, false).getRoot(ServerMessage);
      if (!message._isReply || message.reply.error.category !== "unknown_ticket_type") {
        throw new Error(`${name}: an unexpected answer`);
      }
      ++answered;
    }
  }));
  const wall = (performance.now() - began) / 1000;
  const cpu = pids.map((pid, index) => cpuSeconds(pid) - before[index]);
  for (const { client } of clients) client.close();
  trips.sort((a, b) => a - b);
  const round = (value, digits = 3) => Number(value.toFixed(digits));
  return {
    commands: answered,
    commands_per_s: round(answered / wall, 1),
    round_trip_ms: { p50: round(percentile(trips, 50)), p90: round(percentile(trips, 90)), p99: round(percentile(trips, 99)) },
    cpu_us_per_command: cpu.map((seconds) => round((seconds / answered) * 1e6, 1)),
  };
}

const cluster = await startCluster(1);
try {
  const [node] = cluster.nodes;
  const pids = cluster.pids();
  const tcp = await phase("tcp", () => tcpClient(node.client), [pids.nodes[0]]);
  const ws = await phase("ws", () => webSocketClient(cluster.gateways[0].ws), [pids.nodes[0], pids.gateways[0]]);
  const result = {
    connections,
    offered_per_s: rate,
    seconds,
    tcp: { ...tcp, node_cpu_us_per_command: tcp.cpu_us_per_command[0] },
    websocket: {
      ...ws,
      node_cpu_us_per_command: ws.cpu_us_per_command[0],
      gateway_cpu_us_per_command: ws.cpu_us_per_command[1],
    },
  };
  delete result.tcp.cpu_us_per_command;
  delete result.websocket.cpu_us_per_command;
  result.added_round_trip_ms = {
    p50: Number((ws.round_trip_ms.p50 - tcp.round_trip_ms.p50).toFixed(3)),
    p99: Number((ws.round_trip_ms.p99 - tcp.round_trip_ms.p99).toFixed(3)),
  };
  result.added_cpu_us_per_command = Number(
    (ws.cpu_us_per_command[0] + ws.cpu_us_per_command[1] - tcp.cpu_us_per_command[0]).toFixed(1));
  const text = JSON.stringify(result, null, 2);
  console.log(text);
  if (options.json) writeFileSync(options.json, `${text}\n`);
} finally {
  await cluster.stop();
}
