// matchmesh's client for browsers and Node.js: a player's session on a matchmesh cluster, over
// the gateway's WebSocket. Each binary message is one client-protocol message (node/client.capnp,
// compiled to ./generated/ by capnp-es); this layer turns them into promises and events.
//
//   const player = await connect("ws://127.0.0.1:7300/ws", { user: "ann" });
//   player.on("matched", (match) => console.log(match.players));
//   const match = await player.startTicket(1, { rating: 1500 });

import * as capnp from "capnp-es";
import {
  EndReason as WireEndReason,
  MatchResult as WireMatchResult,
  Push as WirePush,
  Push_Kind,
  Reply as WireReply,
  Reply_Which,
  Request,
  ServerMessage,
} from "./generated/client.js";

/** The error categories a node answers with (Error.category in the client protocol). */
export type ErrorCategory =
  // sessions
  | "invalid_argument"
  | "unauthenticated"
  | "invalid_token"
  | "forbidden"
  | "draining"
  | "overloaded"
  | "rate_limited"
  | "malformed_request"
  | "frame_too_large"
  | "too_many_connections"
  // tickets
  | "unknown_ticket_type"
  | "invalid_params"
  | "not_set_up"
  | "already_has_ticket"
  | "in_previous_room"
  | "failed_to_create"
  | "user_not_found"
  | "ticket_not_found"
  | "not_owner"
  | "not_active"
  | "room_not_found"
  | "target_not_found"
  | "party_unavailable"
  | "completed_room_required"
  | "ticket_exists"
  | "backfill_not_found"
  | "join_refused"
  // store commands
  | "search_too_costly"
  | "too_many_range_values"
  | "unavailable"
  // this client's own
  | "disconnected"
  | "timeout";

/** A refusal from the node (or the connection's end), with the node's words. */
export class MatchmeshError extends Error {
  constructor(
    readonly category: ErrorCategory,
    message: string,
    /** When trying again may succeed (overloaded, too_many_connections); 0: no hint. */
    readonly retryAfterMs = 0,
  ) {
    super(`${category}: ${message}`);
    this.name = "MatchmeshError";
  }
}

/** Why a ticket ended (on 220, 219 and 222 pushes). */
export type EndReason =
  | "unspecified"
  | "completed"
  | "timedOut"
  | "canceled"
  | "left"
  | "kicked"
  | "disconnected"
  | "nodeGone"
  | "draining";

const endReasons: readonly EndReason[] = [
  "unspecified",
  "completed",
  "timedOut",
  "canceled",
  "left",
  "kicked",
  "disconnected",
  "nodeGone",
  "draining",
];

/** A ticket that ended without a match: timed out (219) or canceled (222), and why. */
export class TicketEnded extends Error {
  constructor(
    readonly ticketType: number,
    readonly reason: EndReason,
    message: string,
  ) {
    super(message);
    this.name = "TicketEnded";
  }
}

export interface MatchedPlayer {
  user: string;
  /** The ticket that brought the player in: a party's players share it. */
  party: string;
  /** Index into `sides`; -1 without teams. */
  side: number;
  /** The values the player matched with. */
  values: Record<string, number>;
  waitMs: number;
}

export interface Match {
  ticketType: number;
  ticketId: string;
  roomId: string;
  /** In the order they joined, the room owner's party first. */
  players: MatchedPlayer[];
  /** One per side for a team type; empty otherwise. */
  sides: { rating: number; players: number }[];
  quality: { spread: number; sideDifference: number; relaxStep: number } | null;
}

/** A push as it came, for the kinds without an event of their own (and for every push). */
export interface PushMessage {
  ticketType: number;
  kind: "success" | "timeout" | "cancel" | "broadcast" | "announce" | "failure";
  ver: number;
  cmd: number;
  payload: Uint8Array;
  ticketId: string;
  roomId: string;
  reason: EndReason;
}

export interface Events {
  /** 220: a ticket of this session's user matched (also when a party's owner started it). */
  matched: (match: Match) => void;
  /** 219 */
  timedOut: (ended: TicketEnded) => void;
  /** 222 */
  canceled: (ended: TicketEnded) => void;
  /** 224: a room member's broadcast. */
  broadcast: (push: PushMessage) => void;
  /** A player joined the room of a ticket this user is in (the stock node's 221, with a ticket type's announceMembers). */
  memberJoined: (member: RoomMember) => void;
  /** A player left that room (223). */
  memberLeft: (member: RoomMember) => void;
  /** Any announcement the game's callbacks chose, the two above included. */
  announce: (push: PushMessage) => void;
  /** Every push, decoded. */
  push: (push: PushMessage) => void;
  /** The connection ended; `willReconnect` says whether the client tries again. */
  disconnected: (error: MatchmeshError, willReconnect: boolean) => void;
  /** A new session after a lost connection (tickets of the old one have ended). */
  reconnected: () => void;
}

export interface RoomMember {
  ticketType: number;
  roomId: string;
  user: string;
}

/** The WebSocket class to use: the global one in browsers and Node.js 22+. */
export type WebSocketClass = new (url: string) => WebSocket;

export interface ConnectOptions {
  user: string;
  /** The node's token for this user, if the cluster requires one (a function: fetched anew on each reconnect). */
  token?: string | (() => string | Promise<string>);
  /** Where the global WebSocket is missing (Node.js 20 without --experimental-websocket). */
  WebSocket?: WebSocketClass;
  /** A request unanswered this long fails with `timeout` (default 10 s). */
  requestTimeoutMs?: number;
  /** After a lost connection, try again with back-off (default: on, from 0.5 s up to 15 s, jittered). */
  reconnect?: false | { initialMs?: number; maxMs?: number; attempts?: number };
}

/** Opens a session as `options.user`; resolves once the node has taken the hello. */
export async function connect(url: string, options: ConnectOptions): Promise<Client> {
  const client = new Client(url, options);
  await client.open();
  return client;
}

interface Pending {
  resolve: (reply: WireReply) => void;
  reject: (error: MatchmeshError) => void;
  timer: ReturnType<typeof setTimeout>;
}

interface Waiting {
  resolve: (match: Match) => void;
  reject: (error: Error) => void;
}

type Listeners = { [K in keyof Events]: Set<Events[K]> };

export class Client {
  private socket: WebSocket | null = null;
  private nextId = 1n;
  private readonly pending = new Map<bigint, Pending>();
  private readonly waiting = new Map<number, Waiting>();  // by ticket type
  private readonly listeners: Listeners = {
    matched: new Set(),
    timedOut: new Set(),
    canceled: new Set(),
    broadcast: new Set(),
    memberJoined: new Set(),
    memberLeft: new Set(),
    announce: new Set(),
    push: new Set(),
    disconnected: new Set(),
    reconnected: new Set(),
  };
  private closedByUs = false;
  private lastWord: MatchmeshError | null = null;  // an error reply with id 0: why the node closes

  constructor(
    readonly url: string,
    private readonly options: ConnectOptions,
  ) {}

  get user(): string {
    return this.options.user;
  }

  on<K extends keyof Events>(event: K, listener: Events[K]): this {
    this.listeners[event].add(listener);
    return this;
  }

  off<K extends keyof Events>(event: K, listener: Events[K]): this {
    this.listeners[event].delete(listener);
    return this;
  }

  /**
   * Starts a ticket of `ticketType` with the player's values; resolves with the match, rejects
   * with a MatchmeshError if the node refuses it (`overloaded` carries retryAfterMs) or a
   * TicketEnded if it times out or is canceled.
   */
  async startTicket(
    ticketType: number,
    values: Record<string, number>,
    options: { party?: string[]; applicationData?: Uint8Array } = {},
  ): Promise<Match> {
    if (this.waiting.has(ticketType)) {
      throw new MatchmeshError("already_has_ticket", `this client already waits on a ticket of type ${ticketType}`);
    }
    const ended = new Promise<Match>((resolve, reject) => {
      this.waiting.set(ticketType, { resolve, reject });
    });
    ended.catch(() => {});  // observed below; a refusal must not surface as unhandled
    try {
      await this.call((request) => {
        const start = request._initStartTicket();
        start.ticketType = ticketType;
        const names = Object.keys(values);
        const list = start._initValues(names.length);
        names.forEach((name, index) => {
          const property = list.get(index);
          property.name = name;
          property.value = BigInt(Math.round(values[name]));
        });
        const party = options.party ?? [];
        const members = start._initParty(party.length);
        party.forEach((user, index) => members.set(index, user));
        if (options.applicationData) {
          start._initApplicationData(options.applicationData.byteLength).copyBuffer(options.applicationData);
        }
      });
    } catch (error) {
      this.waiting.delete(ticketType);
      throw error;
    }
    return ended;
  }

  /** Cancels this user's ticket of `ticketType` (its promise rejects with a TicketEnded). */
  async cancelTicket(ticketType: number): Promise<void> {
    await this.call((request) => {
      request._initCancelTicket().ticketType = ticketType;
    });
  }

  /** Lets `owner` name this user in the party of its next ticket of `ticketType`. */
  async acceptParty(ticketType: number, owner: string): Promise<void> {
    await this.call((request) => {
      const accept = request._initAcceptParty();
      accept.ticketType = ticketType;
      accept.owner = owner;
    });
  }

  /** Leaves the room of `ticketType` this user is in. */
  async leave(ticketType: number): Promise<void> {
    await this.call((request) => {
      request._initLeave().ticketType = ticketType;
    });
  }

  /** Sends a 224 to every member of the room of `ticketType`. */
  async broadcast(ticketType: number, message: Uint8Array, ver = 1, cmd = 0): Promise<void> {
    await this.call((request) => {
      const broadcast = request._initBroadcast();
      broadcast.ticketType = ticketType;
      broadcast.ver = ver;
      broadcast.cmd = cmd;
      broadcast._initMessage(message.byteLength).copyBuffer(message);
    });
  }

  /** Ends the session for good (no reconnect). */
  close(): void {
    this.closedByUs = true;
    this.socket?.close(1000, "the client closed the session");
    this.fail(new MatchmeshError("disconnected", "the client closed the session"));
  }

  /** Connects and says hello; used by connect() and by reconnects. */
  async open(): Promise<void> {
    const WebSocketImpl = this.options.WebSocket ?? (globalThis as { WebSocket?: WebSocketClass }).WebSocket;
    if (!WebSocketImpl) {
      throw new MatchmeshError(
        "disconnected",
        "no WebSocket here: pass options.WebSocket (e.g. from the 'ws' package) or run Node.js 22+",
      );
    }
    const socket = new WebSocketImpl(this.url);
    socket.binaryType = "arraybuffer";
    await new Promise<void>((resolve, reject) => {
      socket.onopen = () => resolve();
      socket.onerror = () => reject(new MatchmeshError("disconnected", `cannot connect to ${this.url}`));
      socket.onclose = (event) =>
        reject(new MatchmeshError("disconnected", `${this.url} refused the connection (${event.code} ${event.reason})`));
    });
    this.socket = socket;
    this.lastWord = null;
    socket.onmessage = (event) => this.receive(event.data as ArrayBuffer);
    socket.onerror = () => {};
    socket.onclose = (event) => this.closed(socket, event.code, event.reason);
    try {
      const token = typeof this.options.token === "function" ? await this.options.token() : (this.options.token ?? "");
      await this.call((request) => {
        const hello = request._initHello();
        hello.userId = this.options.user;
        hello.token = token;
      });
    } catch (error) {
      this.socket = null;  // refused (a bad token, a draining node): this connection is done
      socket.onclose = null;
      socket.close(1000, "hello refused");
      throw error;
    }
  }

  private call(fill: (request: Request) => void): Promise<WireReply> {
    const socket = this.socket;
    if (!socket || socket.readyState !== 1) {
      return Promise.reject(new MatchmeshError("disconnected", "not connected"));
    }
    const id = this.nextId++;
    const message = new capnp.Message();
    const request = message.initRoot(Request);
    request.id = id;
    fill(request);
    return new Promise<WireReply>((resolve, reject) => {
      const timeoutMs = this.options.requestTimeoutMs ?? 10000;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new MatchmeshError("timeout", `no reply within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (reply) => {
          if (reply.which() === Reply_Which.ERROR) {
            const error = reply.error;
            reject(new MatchmeshError(error.category as ErrorCategory, error.message, error.retryAfterMs));
          } else {
            resolve(reply);
          }
        },
        reject,
        timer,
      });
      socket.send(message.toArrayBuffer());
    });
  }

  private receive(data: ArrayBuffer): void {
    const message = new capnp.Message(data, false).getRoot(ServerMessage);
    if (message._isReply) {
      const reply = message.reply;
      const pending = this.pending.get(reply.id);
      if (pending) {
        this.pending.delete(reply.id);
        clearTimeout(pending.timer);
        pending.resolve(reply);
      } else if (reply.id === 0n && reply.which() === Reply_Which.ERROR) {
        const error = reply.error;
        this.lastWord = new MatchmeshError(error.category as ErrorCategory, error.message, error.retryAfterMs);
      }
      return;
    }
    this.deliver(decodePush(message.push));
  }

  private deliver(push: PushMessage): void {
    this.emit("push", push);
    const waiting = this.waiting.get(push.ticketType);
    switch (push.kind) {
      case "success": {
        const match = decodeMatch(push);
        this.waiting.delete(push.ticketType);
        waiting?.resolve(match);
        this.emit("matched", match);
        break;
      }
      case "timeout":
      case "cancel": {
        const ended = new TicketEnded(
          push.ticketType,
          push.reason,
          `ticket of type ${push.ticketType} ended without a match: ${push.kind === "timeout" ? "timed out" : "canceled"} (${push.reason})`,
        );
        this.waiting.delete(push.ticketType);
        waiting?.reject(ended);
        this.emit(push.kind === "timeout" ? "timedOut" : "canceled", ended);
        break;
      }
      case "broadcast":
        this.emit("broadcast", push);
        break;
      case "announce":
        if (push.ver === 1 && (push.cmd === memberJoinedCmd || push.cmd === memberLeftCmd)) {
          const member = { ticketType: push.ticketType, roomId: push.roomId, user: new TextDecoder().decode(push.payload) };
          this.emit(push.cmd === memberJoinedCmd ? "memberJoined" : "memberLeft", member);
        }
        this.emit("announce", push);
        break;
      default:
        break;
    }
  }

  private emit<K extends keyof Events>(event: K, ...args: Parameters<Events[K]>): void {
    for (const listener of this.listeners[event]) {
      (listener as (...a: Parameters<Events[K]>) => void)(...args);
    }
  }

  // Every request and ticket of this session fails with `error`: the node ended the session's
  // tickets with it.
  private fail(error: MatchmeshError): void {
    for (const [, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(error);
    }
    this.pending.clear();
    for (const [ticketType, waiting] of this.waiting) {
      waiting.reject(new TicketEnded(ticketType, "disconnected", `the session ended: ${error.message}`));
    }
    this.waiting.clear();
  }

  private closed(socket: WebSocket, code: number, reason: string): void {
    if (socket !== this.socket) {
      return;
    }
    this.socket = null;
    const error =
      this.lastWord ?? new MatchmeshError("disconnected", `the connection closed (${code}${reason ? ` ${reason}` : ""})`);
    this.fail(error);
    const retry = this.options.reconnect ?? {};
    const willReconnect = !this.closedByUs && retry !== false;
    this.emit("disconnected", error, willReconnect);
    if (willReconnect) {
      void this.reconnect(retry, error.retryAfterMs);
    }
  }

  private async reconnect(
    options: { initialMs?: number; maxMs?: number; attempts?: number },
    hintMs: number,
  ): Promise<void> {
    const initial = options.initialMs ?? 500;
    const max = options.maxMs ?? 15000;
    const attempts = options.attempts ?? Infinity;
    for (let attempt = 0; attempt < attempts && !this.closedByUs; ++attempt) {
      const ceiling = Math.max(hintMs, Math.min(max, initial * 2 ** attempt));
      await new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)));
      if (this.closedByUs) {
        return;
      }
      try {
        await this.open();
        this.emit("reconnected");
        return;
      } catch (error) {
        hintMs = error instanceof MatchmeshError ? error.retryAfterMs : 0;
        this.socket?.close();
        this.socket = null;
      }
    }
  }
}

const memberJoinedCmd = 221;
const memberLeftCmd = 223;

const pushKinds: readonly PushMessage["kind"][] = ["success", "timeout", "cancel", "broadcast", "announce", "failure"];

function decodePush(push: WirePush): PushMessage {
  return {
    ticketType: push.ticketType,
    kind: pushKinds[push.kind] ?? "failure",
    ver: push.ver,
    cmd: push.cmd,
    payload: push._hasPayload() ? new Uint8Array(push.payload.toUint8Array()) : new Uint8Array(),
    ticketId: push.ticketId,
    roomId: push.roomId,
    reason: endReasons[push.reason as number] ?? "unspecified",
  };
}

// A 220's payload is the stock node's MatchResult; a game that embeds the node may send its own,
// which then reads as a match without players.
function decodeMatch(push: PushMessage): Match {
  const match: Match = {
    ticketType: push.ticketType,
    ticketId: push.ticketId,
    roomId: push.roomId,
    players: [],
    sides: [],
    quality: null,
  };
  if (push.payload.byteLength === 0 || push.payload.byteLength % 8 !== 0) {
    return match;
  }
  try {
    const result = new capnp.Message(push.payload, false).getRoot(WireMatchResult);
    match.players = result.members.map((player) => ({
      user: player.user,
      party: player.party,
      side: player.side,
      values: Object.fromEntries(player.values.map((value) => [value.name, Number(value.value)])),
      waitMs: player.waitMs,
    }));
    match.sides = result.sides.map((side) => ({ rating: side.rating, players: side.players }));
    const quality = result.quality;
    match.quality = { spread: Number(quality.spread), sideDifference: quality.sideDifference, relaxStep: quality.relaxStep };
  } catch {
    // not a MatchResult: the game's own payload, in `push.payload` of the "push" event
  }
  return match;
}

export { WireEndReason as EndReasonCode, Push_Kind as PushKindCode };
