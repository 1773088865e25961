// packd's JavaScript prelude: evaluated by runtime.c before the pack's
// bundle, once per snapshot. It gives the pack what a JavaScript author
// expects of a host (console, fetch, crypto, TextEncoder, URL, timers,
// process.env) on top of QuickJS and the guest ABI, and keeps the pack's
// tools and checks for the calls: the SDK (sdk/js) registers them through
// globalThis[Symbol.for("packd")]. What C gives it is __packd_native, taken
// and deleted here; what it gives C back is __packd_hooks.
(function () {
  "use strict";
  const native = globalThis.__packd_native;
  delete globalThis.__packd_native;
  const define = (o, name, value) =>
    Object.defineProperty(o, name, { value, writable: true, configurable: true, enumerable: false });

  // What QuickJS 2021-03-27 lacks of what bundles now use.
  if (!Object.hasOwn) define(Object, "hasOwn", (o, k) => Object.prototype.hasOwnProperty.call(Object(o), k));
  for (const C of [Array, String, ...[Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array]]) {
    if (!C.prototype.at)
      define(C.prototype, "at", function (i) {
        i = Math.trunc(i) || 0;
        if (i < 0) i += this.length;
        return i < 0 || i >= this.length ? undefined : this[i];
      });
  }
  if (!Array.prototype.findLast) {
    define(Array.prototype, "findLastIndex", function (f, t) {
      for (let i = this.length - 1; i >= 0; i--) if (f.call(t, this[i], i, this)) return i;
      return -1;
    });
    define(Array.prototype, "findLast", function (f, t) {
      const i = this.findLastIndex(f, t);
      return i < 0 ? undefined : this[i];
    });
  }
  if (!Object.groupBy)
    define(Object, "groupBy", (items, f) => {
      const out = Object.create(null);
      let i = 0;
      for (const v of items) {
        const k = f(v, i++);
        if (!Object.prototype.hasOwnProperty.call(out, k)) out[k] = [];
        out[k].push(v);
      }
      return out;
    });

  // console: lines on the guest's stdout (log, info, debug) and stderr
  // (warn, error, trace), which packd forwards as whole lines.
  const inspect = (v, depth, seen) => {
    switch (typeof v) {
      case "string":
        return depth === 0 ? v : `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n")}'`;
      case "bigint":
        return `${v}n`;
      case "symbol":
        return v.toString();
      case "function":
        return `[Function: ${v.name || "(anonymous)"}]`;
      case "object":
        break;
      default:
        return String(v);
    }
    if (v === null) return "null";
    if (v instanceof Error) return v.stack ? `${v.name}: ${v.message}\n${v.stack}`.trimEnd() : `${v.name}: ${v.message}`;
    if (v instanceof Date) return isNaN(v) ? "Invalid Date" : v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (seen.includes(v)) return "[Circular]";
    if (depth > 2) return Array.isArray(v) ? "[Array]" : "[Object]";
    seen = [...seen, v];
    const d = depth + 1;
    if (Array.isArray(v)) return v.length ? `[ ${v.map((x) => inspect(x, d, seen)).join(", ")} ]` : "[]";
    if (v instanceof Map)
      return `Map(${v.size}) { ${[...v].map(([k, x]) => `${inspect(k, d, seen)} => ${inspect(x, d, seen)}`).join(", ")} }`;
    if (v instanceof Set) return `Set(${v.size}) { ${[...v].map((x) => inspect(x, d, seen)).join(", ")} }`;
    if (ArrayBuffer.isView(v)) return `${v.constructor.name}(${v.length}) [ ${Array.from(v).join(", ")} ]`;
    const keys = Object.keys(v);
    const name = v.constructor && v.constructor !== Object && v.constructor.name ? `${v.constructor.name} ` : "";
    if (!keys.length) return `${name}{}`;
    const key = (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : inspect(k, 1, seen));
    return `${name}{ ${keys.map((k) => `${key(k)}: ${inspect(v[k], d, seen)}`).join(", ")} }`;
  };
  const format = (args) => {
    let out = [];
    let rest = args;
    if (typeof args[0] === "string" && args[0].includes("%")) {
      let i = 1;
      const head = args[0].replace(/%([sdifjoOc%])/g, (m, c) => {
        if (c === "%") return "%";
        if (i >= args.length) return m;
        const a = args[i++];
        switch (c) {
          case "s":
            return typeof a === "string" ? a : inspect(a, 1, []);
          case "d":
          case "i":
            return typeof a === "bigint" ? `${a}n` : String(c === "i" ? Math.trunc(Number(a)) : Number(a));
          case "f":
            return String(Number(a));
          case "j":
            try {
              return JSON.stringify(a);
            } catch {
              return "[Circular]";
            }
          case "c":
            return "";
          default:
            return inspect(a, 1, []);
        }
      });
      out.push(head);
      rest = args.slice(i);
    } else if (args.length) {
      out.push(inspect(args[0], 0, []));
      rest = args.slice(1);
    }
    for (const a of rest) out.push(inspect(a, 0, []));
    return out.join(" ");
  };
  const line = (fd) => (...args) => native.write(fd, format(args) + "\n");
  const counts = new Map();
  const timings = new Map();
  globalThis.console = {
    log: line(1),
    info: line(1),
    debug: line(1),
    warn: line(2),
    error: line(2),
    trace: (...args) => native.write(2, `Trace: ${format(args)}\n${new Error().stack || ""}`),
    dir: (v) => native.write(1, inspect(v, 1, []) + "\n"),
    assert: (ok, ...args) => {
      if (!ok) native.write(2, `Assertion failed${args.length ? ": " + format(args) : ""}\n`);
    },
    count: (label = "default") => {
      counts.set(label, (counts.get(label) || 0) + 1);
      native.write(1, `${label}: ${counts.get(label)}\n`);
    },
    time: (label = "default") => void timings.set(label, native.monotonic()),
    timeEnd: (label = "default") => {
      if (timings.has(label)) native.write(1, `${label}: ${(native.monotonic() - timings.get(label)).toFixed(3)}ms\n`);
      timings.delete(label);
    },
  };

  // Text.
  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(s = "") {
      return new Uint8Array(native.utf8Encode(String(s)));
    }
    encodeInto(s, into) {
      const b = this.encode(s);
      const n = Math.min(b.length, into.length);
      // Do not cut a character in two.
      let k = n;
      if (k < b.length) while (k > 0 && (b[k] & 0xc0) === 0x80) k--;
      into.set(b.subarray(0, k));
      return { read: String(s).slice(0, new TextDecoder().decode(b.subarray(0, k)).length).length, written: k };
    }
  }
  class TextDecoder {
    constructor(label = "utf-8", options = {}) {
      const l = String(label).trim().toLowerCase();
      if (l !== "utf-8" && l !== "utf8" && l !== "unicode-1-1-utf-8")
        throw new RangeError(`The "${label}" encoding is not supported`);
      this.fatal = !!options.fatal;
      this.ignoreBOM = !!options.ignoreBOM;
    }
    get encoding() {
      return "utf-8";
    }
    decode(input) {
      if (input === undefined) return "";
      let bytes = ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
      if (!this.ignoreBOM && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
      return native.utf8Decode(bytes);
    }
  }
  globalThis.TextEncoder = TextEncoder;
  globalThis.TextDecoder = TextDecoder;

  const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  globalThis.btoa = (s) => {
    s = String(s);
    let out = "";
    for (let i = 0; i < s.length; i += 3) {
      const c = [s.charCodeAt(i), s.charCodeAt(i + 1), s.charCodeAt(i + 2)];
      if (c.some((x) => x > 255)) throw new Error("btoa: the string has characters outside Latin-1");
      const n = (c[0] << 16) | ((c[1] || 0) << 8) | (c[2] || 0);
      out += b64[n >> 18] + b64[(n >> 12) & 63] + (i + 1 < s.length ? b64[(n >> 6) & 63] : "=") + (i + 2 < s.length ? b64[n & 63] : "=");
    }
    return out;
  };
  globalThis.atob = (s) => {
    s = String(s).replace(/[\t\n\f\r ]/g, "");
    if (s.length % 4 === 0) s = s.replace(/==?$/, "");
    if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) throw new Error("atob: not base64");
    let out = "";
    let bits = 0;
    let n = 0;
    for (const ch of s) {
      n = (n << 6) | b64.indexOf(ch);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out += String.fromCharCode((n >> bits) & 255);
      }
    }
    return out;
  };

  // Buffer: Node's common subset, a Uint8Array with encodings (utf8,
  // hex, base64, base64url, latin1/binary, ascii): from, alloc,
  // allocUnsafe, concat, isBuffer, isEncoding, byteLength, compare;
  // toString, toJSON, equals, compare, slice/subarray (views, as Node's),
  // write, readUInt8/16/32 and their writes (LE, BE). GUEST-ABI.md lists
  // what else of Node a pack has.
  const encodingOf = (e) => {
    const l = e === undefined ? "utf8" : String(e).toLowerCase();
    const known = { utf8: "utf8", "utf-8": "utf8", hex: "hex", base64: "base64", base64url: "base64url", latin1: "latin1", binary: "latin1", ascii: "ascii" };
    if (!known[l]) throw new TypeError(`Unknown encoding: ${e}`);
    return known[l];
  };
  const fromB64 = (s, url) => {
    s = String(s).replace(/[^A-Za-z0-9+/\-_]/g, "");
    if (url || /[-_]/.test(s)) s = s.replace(/-/g, "+").replace(/_/g, "/");
    if (s.length % 4 === 1) s = s.slice(0, -1);
    const bin = globalThis.atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  };
  const latin1 = (b) => {
    let out = "";
    for (let i = 0; i < b.length; i += 8192) out += String.fromCharCode.apply(null, b.subarray(i, i + 8192));
    return out;
  };
  const encodeString = (s, enc) => {
    switch (encodingOf(enc)) {
      case "utf8":
        return new Uint8Array(native.utf8Encode(s));
      case "hex": {
        const n = s.length >> 1;
        const out = new Uint8Array(n);
        let i = 0;
        for (; i < n; i++) {
          const v = parseInt(s.substr(i * 2, 2), 16);
          if (Number.isNaN(v)) break;
          out[i] = v;
        }
        return out.subarray(0, i);
      }
      case "base64":
        return fromB64(s, false);
      case "base64url":
        return fromB64(s, true);
      default: {
        const out = new Uint8Array(s.length);
        for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 255;
        return out;
      }
    }
  };
  class Buffer extends Uint8Array {
    static from(v, encOrOffset, length) {
      if (typeof v === "string") return toBuffer(encodeString(v, encOrOffset));
      if (v instanceof ArrayBuffer) return new Buffer(v, encOrOffset || 0, length === undefined ? v.byteLength - (encOrOffset || 0) : length);
      if (ArrayBuffer.isView(v)) return toBuffer(new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength)));
      if (v && v.type === "Buffer" && Array.isArray(v.data)) return toBuffer(Uint8Array.from(v.data));
      if (Array.isArray(v) || (v && typeof v.length === "number")) return toBuffer(Uint8Array.from(v, (x) => x & 255));
      throw new TypeError("The first argument must be a string, Buffer, ArrayBuffer, Array, or array-like object.");
    }
    static alloc(n, fill, enc) {
      const b = new Buffer(n);
      if (fill !== undefined && fill !== 0) b.fill(typeof fill === "string" ? encodeString(fill, enc)[0] || 0 : fill);
      return b;
    }
    static allocUnsafe(n) {
      return new Buffer(n);
    }
    static isBuffer(v) {
      return v instanceof Buffer;
    }
    static isEncoding(e) {
      try {
        encodingOf(e);
        return true;
      } catch {
        return false;
      }
    }
    static byteLength(v, enc) {
      return typeof v === "string" ? encodeString(v, enc).length : v.byteLength;
    }
    static concat(list, total) {
      const n = total === undefined ? list.reduce((a, b) => a + b.length, 0) : total;
      const out = Buffer.alloc(n);
      let at = 0;
      for (const b of list) {
        if (at >= n) break;
        out.set(b.subarray(0, n - at), at);
        at += Math.min(b.length, n - at);
      }
      return out;
    }
    static compare(a, b) {
      const n = Math.min(a.length, b.length);
      for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
      return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
    }
    toString(enc, start = 0, end = this.length) {
      const b = this.subarray(start, end);
      switch (encodingOf(enc)) {
        case "utf8":
          return native.utf8Decode(new Uint8Array(b));
        case "hex":
          return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
        case "base64":
          return globalThis.btoa(latin1(b));
        case "base64url":
          return globalThis.btoa(latin1(b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
        case "ascii":
          return latin1(b.map((x) => x & 127));
        default:
          return latin1(b);
      }
    }
    toJSON() {
      return { type: "Buffer", data: Array.from(this) };
    }
    equals(o) {
      return Buffer.compare(this, o) === 0;
    }
    compare(o) {
      return Buffer.compare(this, o);
    }
    subarray(start, end) {
      return toBuffer(super.subarray(start, end));
    }
    slice(start, end) {
      return this.subarray(start, end);
    }
    write(str, offset = 0, length, enc) {
      if (typeof offset === "string") [enc, offset] = [offset, 0];
      else if (typeof length === "string") [enc, length] = [length, undefined];
      const b = encodeString(String(str), enc).subarray(0, Math.min(length ?? Infinity, this.length - offset));
      this.set(b, offset);
      return b.length;
    }
  }
  const toBuffer = (u8) => new Buffer(u8.buffer, u8.byteOffset, u8.byteLength);
  for (const [name, size] of [["UInt8", 1], ["UInt16", 2], ["UInt32", 4]]) {
    for (const le of size === 1 ? [""] : ["LE", "BE"]) {
      const little = le === "LE";
      Buffer.prototype[`read${name}${le}`] = function (at = 0) {
        if (at < 0 || at + size > this.length) throw new RangeError(`The value of "offset" is out of range. It must be >= 0 and <= ${this.length - size}. Received ${at}`);
        let v = 0;
        for (let i = 0; i < size; i++) v = v * 256 + this[at + (little ? size - 1 - i : i)];
        return v;
      };
      Buffer.prototype[`write${name}${le}`] = function (value, at = 0) {
        if (at < 0 || at + size > this.length) throw new RangeError(`The value of "offset" is out of range. It must be >= 0 and <= ${this.length - size}. Received ${at}`);
        let v = Number(value);
        for (let i = 0; i < size; i++) {
          this[at + (little ? i : size - 1 - i)] = v & 255;
          v = Math.floor(v / 256);
        }
        return at + size;
      };
      Buffer.prototype[`readUint${name.slice(4)}${le}`] = Buffer.prototype[`read${name}${le}`];
      Buffer.prototype[`writeUint${name.slice(4)}${le}`] = Buffer.prototype[`write${name}${le}`];
    }
  }
  globalThis.Buffer = Buffer;

  // crypto: random_get. No subtle.
  const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  globalThis.crypto = {
    getRandomValues(view) {
      if (!(view instanceof Int8Array || view instanceof Uint8Array || view instanceof Uint8ClampedArray || view instanceof Int16Array || view instanceof Uint16Array || view instanceof Int32Array || view instanceof Uint32Array || (typeof BigInt64Array !== "undefined" && (view instanceof BigInt64Array || view instanceof BigUint64Array))))
        throw new TypeError("crypto.getRandomValues takes an integer typed array");
      if (view.byteLength > 65536) throw new RangeError("crypto.getRandomValues: at most 65536 bytes");
      native.random(view);
      return view;
    },
    randomUUID() {
      const b = this.getRandomValues(new Uint8Array(16));
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      const h = hex(b);
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    },
  };

  // Math.random: xoshiro128** seeded from random_get at the first draw of
  // each call. QuickJS seeds its own once, when the context is made in
  // _initialize, so every call reset to the snapshot drew the same
  // numbers, for every tenant. The seed is on the call's tape: a replay
  // draws the same numbers.
  const rs = new Uint32Array(4);
  let seeded = false;
  const rotl = (x, k) => (x << k) | (x >>> (32 - k));
  const next32 = () => {
    const r = Math.imul(rotl(Math.imul(rs[1], 5), 7), 9) >>> 0;
    const t = rs[1] << 9;
    rs[2] ^= rs[0];
    rs[3] ^= rs[1];
    rs[1] ^= rs[2];
    rs[0] ^= rs[3];
    rs[2] ^= t;
    rs[3] = rotl(rs[3], 11);
    return r;
  };
  Math.random = function random() {
    if (!seeded) {
      do native.random(rs);
      while ((rs[0] | rs[1] | rs[2] | rs[3]) === 0);
      seeded = true;
    }
    return ((next32() >>> 5) * 67108864 + (next32() >>> 6)) / 9007199254740992;
  };
  const reseed = () => {
    seeded = false;
  };

  // Timers: run by the call's loop once its jobs are done, sleeping in
  // poll_oneoff until the next is due (packd ends a sleep at the deadline).
  let timers = [];
  let timerId = 0;
  const addTimer = (fn, ms, args, every) => {
    if (typeof fn !== "function") throw new TypeError("the callback must be a function");
    const id = ++timerId;
    ms = Math.max(0, Number(ms) || 0);
    timers.push({ id, at: native.monotonic() + ms, fn, args, every: every ? ms : -1, seq: id });
    return id;
  };
  const clearTimer = (id) => {
    timers = timers.filter((t) => t.id !== id);
  };
  globalThis.setTimeout = (fn, ms, ...args) => addTimer(fn, ms, args, false);
  globalThis.setInterval = (fn, ms, ...args) => addTimer(fn, ms, args, true);
  globalThis.clearTimeout = clearTimer;
  globalThis.clearInterval = clearTimer;
  globalThis.queueMicrotask = (fn) => void Promise.resolve().then(fn);
  const origin = native.monotonic();
  globalThis.performance = { now: () => native.monotonic() - origin, timeOrigin: Date.now() };

  const env = native.environ();
  globalThis.process = {
    env,
    argv: [],
    platform: "wasi",
    versions: {},
    nextTick: (fn, ...args) => queueMicrotask(() => fn(...args)),
  };

  globalThis.structuredClone = (v) => {
    const seen = new Map();
    const clone = (x) => {
      if (typeof x === "function" || typeof x === "symbol") throw new TypeError("structuredClone: cannot clone a " + typeof x);
      if (x === null || typeof x !== "object") return x;
      if (seen.has(x)) return seen.get(x);
      let out;
      if (x instanceof Date) out = new Date(x.getTime());
      else if (x instanceof RegExp) out = new RegExp(x.source, x.flags);
      else if (x instanceof ArrayBuffer) out = x.slice(0);
      else if (ArrayBuffer.isView(x)) out = new x.constructor(x);
      else if (x instanceof Map) {
        out = new Map();
        seen.set(x, out);
        for (const [k, y] of x) out.set(clone(k), clone(y));
        return out;
      } else if (x instanceof Set) {
        out = new Set();
        seen.set(x, out);
        for (const y of x) out.add(clone(y));
        return out;
      } else if (Array.isArray(x)) {
        out = [];
        seen.set(x, out);
        for (let i = 0; i < x.length; i++) out[i] = clone(x[i]);
        return out;
      } else {
        out = x instanceof Error ? new x.constructor(x.message) : {};
        seen.set(x, out);
        for (const k of Object.keys(x)) out[k] = clone(x[k]);
        return out;
      }
      seen.set(x, out);
      return out;
    };
    return clone(v);
  };

  // AbortSignal: a call is stopped by packd, not by the guest, so a
  // context's signal never aborts; AbortController works for the pack's
  // own use.
  class AbortSignal {
    constructor() {
      this.aborted = false;
      this.reason = undefined;
      this.onabort = null;
      this._listeners = [];
    }
    addEventListener(type, fn) {
      if (type === "abort") this._listeners.push(fn);
    }
    removeEventListener(type, fn) {
      this._listeners = this._listeners.filter((f) => f !== fn);
    }
    throwIfAborted() {
      if (this.aborted) throw this.reason;
    }
    static abort(reason) {
      const c = new AbortController();
      c.abort(reason);
      return c.signal;
    }
  }
  class AbortController {
    constructor() {
      this.signal = new AbortSignal();
    }
    abort(reason = new Error("This operation was aborted")) {
      const s = this.signal;
      if (s.aborted) return;
      s.aborted = true;
      s.reason = reason;
      const ev = { type: "abort", target: s };
      if (typeof s.onabort === "function") s.onabort(ev);
      for (const f of s._listeners) f(ev);
    }
  }
  globalThis.AbortSignal = AbortSignal;
  globalThis.AbortController = AbortController;

  // URL and URLSearchParams: absolute and relative http(s) and other
  // hierarchical URLs, as fetch needs them.
  const formEncode = (s) =>
    encodeURIComponent(s).replace(/%20/g, "+").replace(/[!'()~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
  const formDecode = (s) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, " "));
    } catch {
      return s;
    }
  };
  class URLSearchParams {
    constructor(init = "") {
      this._list = [];
      this._url = null;
      if (init instanceof URLSearchParams) this._list = init._list.map((p) => [...p]);
      else if (typeof init === "object" && init !== null) {
        if (typeof init[Symbol.iterator] === "function") for (const [k, v] of init) this._list.push([String(k), String(v)]);
        else for (const k of Object.keys(init)) this._list.push([k, String(init[k])]);
      } else this._parse(String(init));
    }
    _parse(s) {
      this._list = [];
      if (s.startsWith("?")) s = s.slice(1);
      for (const part of s.split("&")) {
        if (!part) continue;
        const i = part.indexOf("=");
        this._list.push(i < 0 ? [formDecode(part), ""] : [formDecode(part.slice(0, i)), formDecode(part.slice(i + 1))]);
      }
    }
    _update() {
      if (this._url) {
        const q = this.toString();
        this._url._search = q ? "?" + q : "";
      }
    }
    get size() {
      return this._list.length;
    }
    append(k, v) {
      this._list.push([String(k), String(v)]);
      this._update();
    }
    delete(k) {
      this._list = this._list.filter(([n]) => n !== String(k));
      this._update();
    }
    get(k) {
      const p = this._list.find(([n]) => n === String(k));
      return p ? p[1] : null;
    }
    getAll(k) {
      return this._list.filter(([n]) => n === String(k)).map(([, v]) => v);
    }
    has(k) {
      return this._list.some(([n]) => n === String(k));
    }
    set(k, v) {
      k = String(k);
      const i = this._list.findIndex(([n]) => n === k);
      if (i < 0) this._list.push([k, String(v)]);
      else {
        this._list[i][1] = String(v);
        this._list = this._list.filter(([n], j) => n !== k || j === i);
      }
      this._update();
    }
    sort() {
      this._list.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      this._update();
    }
    forEach(f, t) {
      for (const [k, v] of this._list) f.call(t, v, k, this);
    }
    keys() {
      return this._list.map(([k]) => k)[Symbol.iterator]();
    }
    values() {
      return this._list.map(([, v]) => v)[Symbol.iterator]();
    }
    entries() {
      return this._list.map((p) => [...p])[Symbol.iterator]();
    }
    [Symbol.iterator]() {
      return this.entries();
    }
    toString() {
      return this._list.map(([k, v]) => formEncode(k) + "=" + formEncode(v)).join("&");
    }
  }
  const special = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21" };
  const removeDots = (path) => {
    const out = [];
    const parts = path.split("/");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (p === "..") {
        if (out.length > 1) out.pop();
        if (i === parts.length - 1) out.push("");
      } else if (p === ".") {
        if (i === parts.length - 1) out.push("");
      } else out.push(p);
    }
    return out.join("/");
  };
  const encodePath = (s) => s.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/g, (c) => encodeURIComponent(c));
  const encodeQuery = (s) => s.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/g, (c) => encodeURIComponent(c));
  class URL {
    constructor(input, base) {
      input = String(input).trim();
      const m = /^([A-Za-z][A-Za-z0-9+.-]*:)(.*)$/.exec(input);
      if (m) this._parseAbsolute(m[1].toLowerCase(), m[2]);
      else {
        if (base === undefined) throw new TypeError(`Invalid URL: ${input}`);
        const b = base instanceof URL ? base : new URL(base);
        this._resolve(input, b);
      }
    }
    _parseAbsolute(protocol, rest) {
      this._protocol = protocol;
      const m = /^(?:\/\/([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?$/.exec(rest.replace(/\\/g, special[protocol] ? "/" : "\\"));
      if (m[1] === undefined && special[protocol]) throw new TypeError(`Invalid URL: ${protocol}${rest}`);
      this._setAuthority(m[1]);
      this._pathname = m[1] !== undefined ? removeDots(encodePath(m[2] || "/")) || "/" : encodePath(m[2]);
      if (m[1] !== undefined && !this._pathname.startsWith("/")) this._pathname = "/" + this._pathname;
      this._search = m[3] && m[3] !== "?" ? encodeQuery(m[3]) : "";
      this._hash = m[4] && m[4] !== "#" ? m[4] : "";
    }
    _setAuthority(auth) {
      this._username = this._password = this._hostname = this._port = "";
      this._hasAuthority = auth !== undefined;
      if (auth === undefined) return;
      const at = auth.lastIndexOf("@");
      if (at >= 0) {
        const cred = auth.slice(0, at);
        const c = cred.indexOf(":");
        this._username = c < 0 ? cred : cred.slice(0, c);
        this._password = c < 0 ? "" : cred.slice(c + 1);
        auth = auth.slice(at + 1);
      }
      const pm = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(auth);
      if (!pm) throw new TypeError(`Invalid URL host: ${auth}`);
      this._hostname = pm[1].toLowerCase();
      if (/[\s<>^|%]/.test(this._hostname) || (special[this._protocol] && !this._hostname)) throw new TypeError(`Invalid URL host: ${auth}`);
      this._port = pm[2] === undefined || pm[2] === special[this._protocol] ? "" : String(Number(pm[2]));
      if (pm[2] !== undefined && pm[2] !== "" && Number(pm[2]) > 65535) throw new TypeError(`Invalid URL port: ${pm[2]}`);
    }
    _resolve(input, b) {
      this._protocol = b._protocol;
      const m = /^([^?#]*)(\?[^#]*)?(#.*)?$/.exec(input.replace(/\\/g, "/"));
      const [, path, search, hash] = m;
      if (path.startsWith("//")) return this._parseAbsolute(b._protocol, input);
      this._username = b._username;
      this._password = b._password;
      this._hostname = b._hostname;
      this._port = b._port;
      this._hasAuthority = b._hasAuthority;
      if (path === "") {
        this._pathname = b._pathname;
        this._search = search !== undefined ? (search === "?" ? "" : encodeQuery(search)) : b._search;
      } else {
        const joined = path.startsWith("/") ? path : b._pathname.slice(0, b._pathname.lastIndexOf("/") + 1) + path;
        this._pathname = removeDots(encodePath(joined));
        this._search = search && search !== "?" ? encodeQuery(search) : "";
      }
      this._hash = hash && hash !== "#" ? hash : "";
    }
    get protocol() {
      return this._protocol;
    }
    get username() {
      return this._username;
    }
    get password() {
      return this._password;
    }
    get hostname() {
      return this._hostname;
    }
    get port() {
      return this._port;
    }
    get host() {
      return this._hostname + (this._port ? ":" + this._port : "");
    }
    get origin() {
      return special[this._protocol] ? `${this._protocol}//${this.host}` : "null";
    }
    get pathname() {
      return this._pathname;
    }
    set pathname(p) {
      p = String(p);
      this._pathname = removeDots(encodePath(p.startsWith("/") ? p : "/" + p));
    }
    get search() {
      return this._search;
    }
    set search(s) {
      s = String(s);
      this._search = s && s !== "?" ? encodeQuery(s.startsWith("?") ? s : "?" + s) : "";
      if (this._params) this._params._parse(this._search);
    }
    get searchParams() {
      if (!this._params) {
        this._params = new URLSearchParams(this._search);
        this._params._url = this;
      }
      return this._params;
    }
    get hash() {
      return this._hash;
    }
    set hash(h) {
      h = String(h);
      this._hash = h && h !== "#" ? (h.startsWith("#") ? h : "#" + h) : "";
    }
    get href() {
      const cred = this._username ? this._username + (this._password ? ":" + this._password : "") + "@" : "";
      const auth = this._hasAuthority ? "//" + cred + this.host : "";
      return this._protocol + auth + this._pathname + this._search + this._hash;
    }
    toString() {
      return this.href;
    }
    toJSON() {
      return this.href;
    }
    static canParse(u, b) {
      try {
        new URL(u, b);
        return true;
      } catch {
        return false;
      }
    }
  }
  globalThis.URL = URL;
  globalThis.URLSearchParams = URLSearchParams;

  // fetch, through the egress imports under the tool's network policy.
  const normName = (n) => {
    n = String(n);
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(n)) throw new TypeError(`Invalid header name: ${n}`);
    return n.toLowerCase();
  };
  class Headers {
    constructor(init) {
      this._map = new Map(); // lower-case name -> [values]
      if (init instanceof Headers) for (const [k, v] of init._map) this._map.set(k, [...v]);
      else if (init && typeof init[Symbol.iterator] === "function") for (const [k, v] of init) this.append(k, v);
      else if (init && typeof init === "object")
        for (const k of Object.keys(init)) {
          const v = init[k];
          if (Array.isArray(v)) for (const x of v) this.append(k, x);
          else this.append(k, v);
        }
    }
    append(k, v) {
      k = normName(k);
      const list = this._map.get(k);
      if (list) list.push(String(v).trim());
      else this._map.set(k, [String(v).trim()]);
    }
    set(k, v) {
      this._map.set(normName(k), [String(v).trim()]);
    }
    get(k) {
      const v = this._map.get(normName(k));
      return v ? v.join(", ") : null;
    }
    getSetCookie() {
      return [...(this._map.get("set-cookie") || [])];
    }
    has(k) {
      return this._map.has(normName(k));
    }
    delete(k) {
      this._map.delete(normName(k));
    }
    forEach(f, t) {
      for (const [k, v] of this.entries()) f.call(t, v, k, this);
    }
    *entries() {
      for (const k of [...this._map.keys()].sort()) yield [k, this.get(k)];
    }
    *keys() {
      for (const [k] of this.entries()) yield k;
    }
    *values() {
      for (const [, v] of this.entries()) yield v;
    }
    [Symbol.iterator]() {
      return this.entries();
    }
  }
  const bodyBytes = (body, headers) => {
    if (body === undefined || body === null) return undefined;
    if (typeof body === "string") {
      if (headers && !headers.has("content-type")) headers.set("content-type", "text/plain;charset=UTF-8");
      return new TextEncoder().encode(body);
    }
    if (body instanceof URLSearchParams) {
      if (headers && !headers.has("content-type")) headers.set("content-type", "application/x-www-form-urlencoded;charset=UTF-8");
      return new TextEncoder().encode(body.toString());
    }
    if (body instanceof ArrayBuffer) return new Uint8Array(body.slice(0));
    if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
    return bodyBytes(String(body), headers);
  };
  class Body {
    _init(body, headers) {
      this._bytes = bodyBytes(body, headers);
      this.bodyUsed = false;
    }
    _take() {
      if (this.bodyUsed) return Promise.reject(new TypeError("Body has already been read"));
      this.bodyUsed = true;
      return Promise.resolve(this._bytes || new Uint8Array(0));
    }
    get body() {
      return this._bytes ? this._bytes : null;
    }
    arrayBuffer() {
      return this._take().then((b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    }
    bytes() {
      return this._take().then((b) => new Uint8Array(b));
    }
    text() {
      return this._take().then((b) => new TextDecoder().decode(b));
    }
    json() {
      return this.text().then((t) => JSON.parse(t));
    }
  }
  class Request extends Body {
    constructor(input, init = {}) {
      super();
      const from = input instanceof Request ? input : null;
      this.url = from ? from.url : new URL(String(input)).href;
      this.method = String(init.method || (from && from.method) || "GET").toUpperCase();
      this.headers = new Headers(init.headers || (from && from.headers));
      this.signal = init.signal || new AbortSignal();
      this.redirect = init.redirect || "follow";
      const body = init.body !== undefined ? init.body : from ? from._bytes : undefined;
      if (body != null && (this.method === "GET" || this.method === "HEAD")) throw new TypeError("Request with GET/HEAD method cannot have body.");
      this._init(body, this.headers);
    }
    clone() {
      return new Request(this);
    }
  }
  class Response extends Body {
    constructor(body = null, init = {}) {
      super();
      this.status = init.status === undefined ? 200 : init.status;
      this.statusText = init.statusText || "";
      this.headers = new Headers(init.headers);
      this.url = init.url || "";
      this.redirected = !!init.redirected;
      this.type = "basic";
      this._init(body, this.headers);
    }
    get ok() {
      return this.status >= 200 && this.status < 300;
    }
    clone() {
      if (this.bodyUsed) throw new TypeError("Response body has already been used");
      return new Response(this._bytes, this);
    }
    static json(data, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
      return new Response(JSON.stringify(data), { ...init, headers });
    }
    static error() {
      const r = new Response(null, { status: 0 });
      r.type = "error";
      return r;
    }
  }
  globalThis.Headers = Headers;
  globalThis.Request = Request;
  globalThis.Response = Response;
  globalThis.fetch = (input, init) => {
    try {
      const req = new Request(input, init);
      if (req.signal.aborted) return Promise.reject(req.signal.reason);
      const headers = {};
      for (const [k, list] of req.headers._map) headers[k] = list;
      const head = JSON.stringify({ method: req.method, url: req.url, headers });
      const [answerJSON, body] = native.http(head, req._bytes);
      const answer = JSON.parse(answerJSON);
      if (answer.error) {
        const e = new TypeError(`fetch failed: ${answer.error.message || answer.error.reason}`);
        e.cause = answer.error;
        return Promise.reject(e);
      }
      return Promise.resolve(new Response(new Uint8Array(body), { status: answer.status, headers: answer.headers, url: answer.url || req.url }));
    } catch (e) {
      return Promise.reject(e);
    }
  };

  // The pack: what the SDK registers, and the calls.
  const tools = new Map();
  const checks = new Map();
  const guardrails = new Map(); // check id -> the guardrail object that names it
  let anyTool = null;
  const envNames = { required: [], optional: [] };
  const registry = Object.freeze({
    abi: 1,
    tool(def) {
      if (def.id === "*") anyTool = def;
      else if (tools.has(def.id)) throw new Error(`tool "${def.id}" is defined twice`);
      tools.set(def.id, def);
    },
    check(def) {
      if (checks.has(def.id)) throw new Error(`check "${def.id}" is defined twice`);
      checks.set(def.id, def);
    },
    guardrail(g) {
      const had = guardrails.get(g.check);
      if (had && had.id !== g.id) throw new Error(`check "${g.check}" is named by two guardrails, "${had.id}" and "${g.id}": packd serves one guardrail per check`);
      guardrails.set(g.check, g);
    },
    env(required, optional) {
      for (const n of required || []) if (!envNames.required.includes(n)) envNames.required.push(String(n));
      for (const n of optional || []) if (!envNames.optional.includes(n)) envNames.optional.push(String(n));
    },
  });
  Object.defineProperty(globalThis, Symbol.for("packd"), { value: registry });

  const thrown = (e) => {
    if (e !== null && typeof e === "object" && "message" in e) {
      const name = e.name === undefined ? "Error" : String(e.name);
      const message = String(e.message);
      // Headed as Node heads a stack, and cut, as Node cuts one, at ten frames.
      const frames = typeof e.stack === "string" ? e.stack.split("\n").filter((l) => l.trim()).slice(0, 10) : [];
      const stack = [`${name}: ${message}`, ...frames].join("\n");
      return { name, message, stack };
    }
    return { name: "Error", message: String(e), stack: "" };
  };
  let outcome = null; // [status, JSON] once the call settled
  const done = (status, v) => {
    if (outcome) return;
    if (status === 0) {
      try {
        // native.json writes what JSON.stringify would, faster, when v is
        // plain data; the answer is then written from it.
        if (native.json(v)) {
          outcome = [0, undefined];
          return;
        }
        const json = JSON.stringify(v);
        outcome = [0, json === undefined ? "null" : json];
      } catch (e) {
        outcome = [1, JSON.stringify(thrown(e))];
      }
    } else outcome = [1, JSON.stringify(thrown(v))];
  };
  const spec = (def, keys) => {
    const out = { id: def.id };
    for (const k of keys) if (def[k] !== undefined) out[k] = def[k];
    return out;
  };
  globalThis.__packd_hooks = {
    loaded() {},
    describe() {
      const toolIds = [...tools.keys()];
      const d = { tools: toolIds, checks: [...checks.keys()] };
      d.toolSpecs = [...tools.values()]
        .filter((t) => t.id !== "*")
        .map((t) => spec(t, ["version", "description", "input", "output", "limits", "network", "effects", "mutating", "needs", "needsSpec", "sandbox", "spec"]));
      // A check's entry: what the check says, under what its guardrail
      // object says; a guardrail whose check no module defines is
      // described too, for packd index to name.
      const fromGuardrail = (g) => ({ ...spec(g, ["kind", "action", "severity", "name", "scope", "config", "sandbox"]), guardrail: g.id, id: g.check });
      d.checkSpecs = [...checks.values()].map((c) => ({
        ...spec(c, ["guardrail", "kind", "action", "severity", "configSchema", "limits", "network"]),
        ...(guardrails.has(c.id) && fromGuardrail(guardrails.get(c.id))),
      }));
      for (const g of guardrails.values()) if (!checks.has(g.check)) d.checkSpecs.push(fromGuardrail(g));
      if (envNames.required.length || envNames.optional.length) d.env = envNames;
      return JSON.stringify(d);
    },
    call(req) {
      outcome = null;
      reseed();
      if (timers.length) timers = [];
      let v;
      try {
        if (req.kind === "invoke") {
          const t = tools.get(req.tool && req.tool.id) || anyTool;
          if (!t) return 1;
          v = t.handler(req.input, req.ctx, req.tool);
        } else if (req.kind === "check-invoke") {
          const c = checks.get(req.check && req.check.id);
          if (!c) return 1;
          v = c.evaluate(req.config === undefined ? {} : req.config, req.trace);
        } else return 1;
      } catch (e) {
        done(1, e);
        return 0;
      }
      if (v !== null && (typeof v === "object" || typeof v === "function") && typeof v.then === "function")
        Promise.resolve(v).then(
          (x) => done(0, x),
          (e) => done(1, e),
        );
      else done(0, v); // a handler that answered at once needs no job
      return 0;
    },
    // drive runs the next timer once the jobs are done: 1 when it ran one
    // (run the jobs again), 0 when the call has settled or nothing is left.
    drive() {
      if (outcome || !timers.length) return 0;
      let next = timers[0];
      for (const t of timers) if (t.at < next.at || (t.at === next.at && t.seq < next.seq)) next = t;
      const wait = next.at - native.monotonic();
      if (wait > 0) native.sleep(wait);
      if (next.every >= 0) {
        next.at += Math.max(next.every, 1);
        next.seq = ++timerId;
      } else clearTimer(next.id);
      try {
        next.fn(...next.args);
      } catch (e) {
        done(1, e); // an uncaught throw in a timer ends the call, as it would end a Node process
      }
      return 1;
    },
    result() {
      return outcome || [1, JSON.stringify({ name: "Error", message: "the handler's promise never settled: nothing was left to run (no timer, no request)", stack: "" })];
    },
  };
})();
