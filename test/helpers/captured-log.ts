/** A sink for the gateway's logger in tests: every line it wrote, as one text. */
import { Writable } from 'node:stream';

export class Captured extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}
