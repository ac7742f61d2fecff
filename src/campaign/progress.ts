/** The progress line on stderr: seeds done, per second, failures so far, ETA. */
export class Progress {
  readonly #total: number;
  readonly #t0 = process.hrtime.bigint();
  readonly #write: ((s: string) => void) | null;
  readonly #tty: boolean;
  #last = 0;
  done = 0;
  failed = 0;

  /** `write` null: silent. On a terminal the line is redrawn in place; elsewhere a line every few seconds. */
  constructor(total: number, write: ((s: string) => void) | null, tty: boolean) {
    this.#total = total;
    this.#write = write;
    this.#tty = tty;
  }

  elapsedMs(): number {
    return Number(process.hrtime.bigint() - this.#t0) / 1e6;
  }

  line(): string {
    const sec = this.elapsedMs() / 1000;
    const rate = sec > 0 ? this.done / sec : 0;
    const left = this.#total - this.done;
    const eta = rate > 0 ? left / rate : Infinity;
    const fmt = (s: number) =>
      !Number.isFinite(s)
        ? '?'
        : s >= 3600
          ? `${(s / 3600).toFixed(1)} h`
          : s >= 60
            ? `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`
            : `${Math.round(s)} s`;
    return `campaign: ${this.done}/${this.#total} seeds, ${rate.toFixed(1)}/s, ${this.failed} failed, ETA ${fmt(eta)}`;
  }

  tick(ok: boolean): void {
    this.done++;
    if (!ok) this.failed++;
    if (!this.#write) return;
    const now = this.elapsedMs();
    const every = this.#tty ? 200 : 5000;
    if (now - this.#last < every && this.done !== this.#total) return;
    this.#last = now;
    this.#write(this.#tty ? `\r${this.line()}\x1b[K` : `${this.line()}\n`);
  }

  end(): void {
    if (this.#write && this.#tty) this.#write(`\r${this.line()}\x1b[K\n`);
  }

  /** A message that must not be overwritten by the next redraw. */
  note(s: string): void {
    if (!this.#write) return;
    this.#write(this.#tty ? `\r\x1b[K${s}\n` : `${s}\n`);
  }
}
