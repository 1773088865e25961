// What pack code has of Node's globals under packd (GUEST-ABI.md,
// "JavaScript"): process.env, holding the environment names the index
// declares (env.required, env.optional); a call may write to it, and the
// next finds it as the snapshot had it; and Buffer, Node's common subset.
// A pack's own tsconfig includes this file for its sources; its tests,
// which run on node, take Node's types instead (@types/node).
declare global {
  var process: { readonly env: Record<string, string | undefined> };

  type BufferEncoding = "utf8" | "utf-8" | "hex" | "base64" | "base64url" | "latin1" | "binary" | "ascii";
  /** Node's Buffer, the subset packd's runtime has (GUEST-ABI.md, "JavaScript"). */
  class Buffer extends Uint8Array {
    static from(value: string, encoding?: BufferEncoding): Buffer;
    static from(value: ArrayBuffer, byteOffset?: number, length?: number): Buffer;
    static from(value: ArrayLike<number> | Uint8Array | { type: "Buffer"; data: number[] }): Buffer;
    static alloc(size: number, fill?: number | string, encoding?: BufferEncoding): Buffer;
    static allocUnsafe(size: number): Buffer;
    static isBuffer(value: unknown): value is Buffer;
    static isEncoding(encoding: string): encoding is BufferEncoding;
    static byteLength(value: string | ArrayBufferView | ArrayBuffer, encoding?: BufferEncoding): number;
    static concat(list: readonly Uint8Array[], totalLength?: number): Buffer;
    static compare(a: Uint8Array, b: Uint8Array): -1 | 0 | 1;
    toString(encoding?: BufferEncoding, start?: number, end?: number): string;
    toJSON(): { type: "Buffer"; data: number[] };
    equals(other: Uint8Array): boolean;
    compare(other: Uint8Array): -1 | 0 | 1;
    subarray(start?: number, end?: number): Buffer;
    slice(start?: number, end?: number): Buffer;
    write(string: string, offset?: number, length?: number, encoding?: BufferEncoding): number;
    readUInt8(offset?: number): number;
    readUInt16LE(offset?: number): number;
    readUInt16BE(offset?: number): number;
    readUInt32LE(offset?: number): number;
    readUInt32BE(offset?: number): number;
    writeUInt8(value: number, offset?: number): number;
    writeUInt16LE(value: number, offset?: number): number;
    writeUInt16BE(value: number, offset?: number): number;
    writeUInt32LE(value: number, offset?: number): number;
    writeUInt32BE(value: number, offset?: number): number;
  }
}

export {};
