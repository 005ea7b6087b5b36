// The SDK against real nodes, through their gateways.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { connect, MatchmeshError, TicketEnded } from "../dist/index.js";
import { startCluster, webSocketClass } from "../testing/cluster.mjs";

let cluster;
let WebSocket;
const clients = [];

before(async () => {
  WebSocket = await webSocketClass();
  cluster = await startCluster(2);
});

after(async () => {
  for (const client of clients) {
    client.close();
  }
  await cluster?.stop();
});

async function player(user, gateway) {
  const client = await connect(gateway, { user, WebSocket, reconnect: false });
  clients.push(client);
  return client;
}

test("two players on two nodes are matched, and each receives the roster", async () => {
  const ann = await player("ann", cluster.gateways[0].ws);
  const bob = await player("bob", cluster.gateways[1].ws);
  const heard = [];
  ann.on("matched", (match) => heard.push(["ann", match.roomId]));
  const joined = [];
  for (const client of [ann, bob]) {
    client.on("memberJoined", (member) => joined.push([client.user, member.user, member.roomId]));
  }
  const [annMatch, bobMatch] = await Promise.all([
    ann.startTicket(1, { rating: 1500 }),
    bob.startTicket(1, { rating: 1550 }),
  ]);
  assert.equal(annMatch.roomId, bobMatch.roomId);
  for (const match of [annMatch, bobMatch]) {
    assert.equal(match.ticketType, 1);
    assert.deepEqual(match.players.map((p) => p.user).sort(), ["ann", "bob"]);
    const byUser = Object.fromEntries(match.players.map((p) => [p.user, p]));
    assert.equal(byUser.ann.values.rating, 1500);
    assert.equal(byUser.bob.values.rating, 1550);
    assert.equal(match.quality?.spread, 50);
  }
  assert.deepEqual(heard, [["ann", annMatch.roomId]]);
  // The room's first player heard of the second joining, and so did the second.
  for (let waited = 0; joined.length < 2 && waited < 2000; waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const room = annMatch.roomId;
  const joiner = annMatch.players[1].user;
  assert.deepEqual(joined.filter(([, , id]) => id === room).map(([to, who]) => [to, who]).sort(),
    [["ann", joiner], ["bob", joiner]]);
});

test("a refused command rejects with the node's category and words", async () => {
  const cid = await player("cid", cluster.gateways[0].ws);
  await assert.rejects(cid.startTicket(9, { rating: 1500 }), (error) => {
    assert.ok(error instanceof MatchmeshError);
    assert.equal(error.category, "unknown_ticket_type");
    assert.match(error.message, /9/);
    return true;
  });
  await assert.rejects(cid.startTicket(1, { level: 3 }), (error) => {
    assert.ok(error instanceof MatchmeshError);
    assert.equal(error.category, "invalid_params");
    return true;
  });
});

test("a canceled ticket rejects with why it ended", async () => {
  const dee = await player("dee", cluster.gateways[1].ws);
  const ticket = dee.startTicket(1, { rating: 9000 });
  await new Promise((resolve) => setTimeout(resolve, 200));
  await dee.cancelTicket(1);
  await assert.rejects(ticket, (error) => {
    assert.ok(error instanceof TicketEnded);
    assert.equal(error.reason, "canceled");
    return true;
  });
});

test("a second session of a user ends the first, which hears why", async () => {
  const first = await player("eve", cluster.gateways[0].ws);
  const ended = new Promise((resolve) => first.on("disconnected", resolve));
  await player("eve", cluster.gateways[1].ws);
  const error = await ended;
  assert.ok(error instanceof MatchmeshError);
});

test("a hello the node refuses rejects connect with the node's category", async () => {
  const guarded = await startCluster(1, {
    configOverride: { cluster: { name: "sdk-tokens", secret: "0123456789abcdef0123456789abcdef", tokenSecret: "fedcba9876543210fedcba9876543210" } },
  });
  try {
    await assert.rejects(
      connect(guarded.gateways[0].ws, { user: "hal", token: "1.00", WebSocket, reconnect: false }),
      (error) => error instanceof MatchmeshError && error.category === "invalid_token",
    );
  } finally {
    await guarded.stop();
  }
});

test("a client whose session ended reconnects with back-off and plays on", async () => {
  const ivy = await connect(cluster.gateways[0].ws, { user: "ivy", WebSocket, reconnect: { initialMs: 50, maxMs: 200 } });
  clients.push(ivy);
  const lost = new Promise((resolve) => ivy.on("disconnected", (error, willReconnect) => resolve(willReconnect)));
  const back = new Promise((resolve) => ivy.on("reconnected", resolve));
  const usurper = await player("ivy", cluster.gateways[1].ws);  // supersedes ivy's session
  assert.equal(await lost, true);
  await back;  // and ivy's new session supersedes the usurper's
  usurper.close();
  const ticket = ivy.startTicket(1, { rating: 100 });
  await new Promise((resolve) => setTimeout(resolve, 100));
  await ivy.cancelTicket(1);
  await assert.rejects(ticket, (error) => error instanceof TicketEnded && error.reason === "canceled");
});
