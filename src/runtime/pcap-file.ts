/**
 * A pcap capture written to a file: the wire layer's PcapWriter (pure
 * encoding into chunks) over a file descriptor. The file I/O lives here, in
 * the runtime, so that src/wire stays free of it.
 */
import * as fs from 'node:fs';
import { type PcapOutput, PcapWriter, type PcapWriterOptions } from '../wire/pcap-writer.js';

class FileOutput implements PcapOutput {
  #fd = -1;

  open(path: string): void {
    this.#fd = fs.openSync(path, 'w');
  }

  write(chunk: Uint8Array): void {
    // writeSync may write less than asked (e.g. on pipes); loop until all is out.
    let off = 0;
    while (off < chunk.length) off += fs.writeSync(this.#fd, chunk, off, chunk.length - off);
  }

  close(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    fs.closeSync(fd);
  }
}

/** Creates a file (truncating it) and a writer whose global header goes to it on the first flush. */
export function openPcapFile(path: string, opts: PcapWriterOptions): PcapWriter {
  const out = new FileOutput();
  // Build (and so validate the options) before creating the file: bad options leave no file behind.
  const w = new PcapWriter(out, opts);
  out.open(path);
  return w;
}
