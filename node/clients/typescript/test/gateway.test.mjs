// The gateway against what a hostile or broken client sends: each gets a named answer, and the
// other clients go on as before.
import assert from "node:assert/strict";
import { connect as connectTcp } from "node:net";
import { after, before, test } from "node:test";

import * as capnp from "capnp-es";
import { WebSocket } from "ws";

import { connect } from "../dist/index.js";
import { Reply_Which, Request, ServerMessage } from "../dist/generated/client.js";
import { startCluster, webSocketClass } from "../testing/cluster.mjs";

const connectionsMax = 8;
let cluster;
let url;

before(async () => {
  cluster = await startCluster(1, {
    gatewayArgs: ["--max-connections", String(connectionsMax), "--write-timeout-ms", "1000"],
  });
  url = cluster.gateways[0].ws;
});

after(async () => {
  await cluster?.stop();
});

// Opens a raw WebSocket (the 'ws' package: it can send what browsers would not).
function open(options = {}) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, options);
    socket.binaryType = "arraybuffer";
    socket.once("open", () => resolve(socket));
    socket.once("error", reject);
  });
}

function closed(socket) {
  return new Promise((resolve) => socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));
}

function nextMessage(socket) {
  return new Promise((resolve) =>
    socket.once("message", (data) => resolve(new capnp.Message(new Uint8Array(data), false).getRoot(ServerMessage))),
  );
}

function hello(user, id = 1n) {
  const message = new capnp.Message();
  const request = message.initRoot(Request);
  request.id = id;
  request._initHello().userId = user;
  return new Uint8Array(message.toArrayBuffer());
}

// A session that works: proof that whatever came before left the others alone.
async function stillServes() {
  const client = await connect(url, { user: `check-${Math.random()}`, WebSocket: await webSocketClass(), reconnect: false });
  await assert.rejects(client.startTicket(9, { rating: 1 }), { category: "unknown_ticket_type" });
  client.close();
}

test("a message that is not a request is answered malformed_request, and the connection stays", async () => {
  const socket = await open();
  socket.send(new Uint8Array(16).fill(0xff));
  const reply = (await nextMessage(socket)).reply;
  assert.equal(reply.id, 0n);
  assert.equal(reply.error.category, "malformed_request");
  socket.send(hello("fay", 7n));
  const greeted = (await nextMessage(socket)).reply;
  assert.equal(greeted.id, 7n);
  assert.equal(greeted.which(), Reply_Which.OK);
  socket.close();
  await stillServes();
});

test("a text message closes the connection with 1003 and says why", async () => {
  const socket = await open();
  const end = closed(socket);
  socket.send("hello");
  const { code, reason } = await end;
  assert.equal(code, 1003);
  assert.match(reason, /binary/);
  await stillServes();
});

test("a message of part of a word closes the connection with 1007", async () => {
  const socket = await open();
  const end = closed(socket);
  socket.send(new Uint8Array(5));
  const { code, reason } = await end;
  assert.equal(code, 1007);
  assert.match(reason, /5 bytes/);
  await stillServes();
});

test("an oversized message is answered frame_too_large, then closed with 1009", async () => {
  const socket = await open();
  const end = closed(socket);
  const word = nextMessage(socket);
  socket.send(new Uint8Array(64 * 1024 + 8));
  const reply = (await word).reply;
  assert.equal(reply.id, 0n);
  assert.equal(reply.error.category, "frame_too_large");
  const { code, reason } = await end;
  assert.equal(code, 1009);
  assert.match(reason, /maxClientFrameBytes/);
  await stillServes();
});

test("a page from an origin not allowed is refused with 403", async () => {
  await assert.rejects(open({ origin: "http://elsewhere.invalid" }), /403/);
  const socket = await open({ origin: new URL(cluster.gateways[0].http).origin });
  socket.close();
  await stillServes();
});

test("a client that stops reading is dropped after the write deadline", async () => {
  const raw = connectTcp(new URL(url).port, "127.0.0.1");
  await new Promise((resolve) => raw.once("connect", resolve));
  raw.write(
    "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
  );
  await new Promise((resolve) => raw.once("data", resolve));  // the 101
  raw.pause();  // and never read again
  // Masked binary frames of an invalid request: each is answered, and the answers pile up.
  const body = new Uint8Array(16).fill(0xff);
  const frame = Buffer.concat([Buffer.from([0x82, 0x80 | body.length, 1, 2, 3, 4]), Buffer.from(body.map((b, i) => b ^ [1, 2, 3, 4][i % 4]))]);
  let ended = false;
  raw.on("close", () => {
    ended = true;
  });
  raw.on("error", () => {});
  // 4 s of requests unread (the deadline is 1 s), then read what is left: the stream must end.
  for (const stop = Date.now() + 4000; !ended && Date.now() < stop; ) {
    if (raw.writableLength < 1024 * 1024) {
      raw.write(Buffer.concat(Array(512).fill(frame)));
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  raw.on("data", () => {});
  raw.resume();
  for (const stop = Date.now() + 10000; !ended && Date.now() < stop; ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(ended, "the gateway kept a client that read nothing");
  await stillServes();
});

test("connections past the limit hear 503 and the ones open are not disturbed", async () => {
  // Open until one is turned away (some of the earlier tests' may still be closing).
  const held = [];
  let response = "";
  for (let tries = 0; tries <= connectionsMax && !response; ++tries) {
    try {
      held.push(await open());
    } catch (error) {
      response = String(error.message);
    }
  }
  assert.match(response, /503/);
  assert.ok(held.length <= connectionsMax);
  const raw = await new Promise((resolve, reject) => {
    const socket = connectTcp(new URL(url).port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk) => (text += chunk.toString()));
    socket.on("close", () => resolve(text));
    socket.on("error", reject);
  });
  assert.match(raw, /^HTTP\/1\.1 503/);
  assert.match(raw, /Retry-After/);
  // The ones held still work.
  held[0].send(hello("gus"));
  assert.equal((await nextMessage(held[0])).reply.which(), Reply_Which.OK);
  for (const socket of held) {
    socket.close();
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  await stillServes();
});
