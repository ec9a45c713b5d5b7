/**
 * Text assembled from many small pieces (a stream's deltas) that costs about its length in memory.
 * `a += piece` keeps every piece alive in a rope (a node of some 32 bytes per piece besides the
 * piece's own string): a 16 MiB answer streamed in 4-character deltas held some 128 MiB that way.
 * Here the pieces are joined into one flat string every `PIECES` pieces, so the text costs its
 * characters and a short list of flat strings.
 */
const PIECES = 512;

export class TextBuilder {
  /** Flat strings, in order. */
  private readonly joined: string[] = [];
  /** Pieces since the last join. */
  private pending: string[] = [];
  private chars = 0;

  /** Characters so far. */
  get length(): number {
    return this.chars;
  }

  append(piece: string): void {
    if (piece === '') return;
    this.pending.push(piece);
    this.chars += piece.length;
    if (this.pending.length >= PIECES) this.flush();
  }

  toString(): string {
    this.flush();
    if (this.joined.length > 1) this.joined.splice(0, this.joined.length, this.joined.join(''));
    return this.joined[0] ?? '';
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    this.joined.push(this.pending.join(''));
    this.pending = [];
  }
}
