/**
 * A FIFO of frames, each with a number (a time) and a small tag (a port),
 * that keeps its storage:
 * taking the last one out resets the indices, not the arrays, so a queue
 * that empties and refills for every frame (a link's lanes in a stream)
 * allocates nothing in steady state.
 */
export class TimedQueue {
  #items: (Uint8Array | undefined)[] = [];
  #at: number[] = [];
  #tag: number[] = [];
  #head = 0;
  #tail = 0;

  get length(): number {
    return this.#tail - this.#head;
  }

  /** Appends at the back. */
  push(item: Uint8Array, at: number, tag = 0): void {
    this.#items[this.#tail] = item;
    this.#at[this.#tail] = at;
    this.#tag[this.#tail] = tag;
    this.#tail++;
  }

  /** Puts an item back at the front. */
  unshift(item: Uint8Array, at: number, tag = 0): void {
    if (this.#head === 0) {
      // Rare (a frame given back by the line): open a slot at the front.
      this.#items.splice(0, 0, item);
      this.#at.splice(0, 0, at);
      this.#tag.splice(0, 0, tag);
      this.#tail++;
      return;
    }
    this.#head--;
    this.#items[this.#head] = item;
    this.#at[this.#head] = at;
    this.#tag[this.#head] = tag;
  }

  /** Inserts in order of `at`, after every item with the same `at` (stable); returns its position from the front. */
  insertByTime(item: Uint8Array, at: number, tag = 0): number {
    let i = this.#tail;
    while (i > this.#head && this.#at[i - 1]! > at) {
      this.#items[i] = this.#items[i - 1];
      this.#at[i] = this.#at[i - 1]!;
      this.#tag[i] = this.#tag[i - 1]!;
      i--;
    }
    this.#items[i] = item;
    this.#at[i] = at;
    this.#tag[i] = tag;
    this.#tail++;
    return i - this.#head;
  }

  /** The front item (length > 0). */
  first(): Uint8Array {
    return this.#items[this.#head]!;
  }

  /** The front item's number (length > 0). */
  firstAt(): number {
    return this.#at[this.#head]!;
  }

  /** The front item's tag (length > 0). */
  firstTag(): number {
    return this.#tag[this.#head]!;
  }

  /** The back item, or undefined. */
  last(): Uint8Array | undefined {
    return this.#tail > this.#head ? this.#items[this.#tail - 1] : undefined;
  }

  /** Takes the front item (length > 0). */
  shift(): Uint8Array {
    const h = this.#head;
    const item = this.#items[h]!;
    this.#items[h] = undefined;
    if (h + 1 === this.#tail) {
      this.#head = 0;
      this.#tail = 0;
    } else {
      this.#head = h + 1;
      if (h >= 1024 && h * 2 >= this.#tail) this.#compact();
    }
    return item;
  }

  /** Takes the back item (length > 0). */
  pop(): Uint8Array {
    this.#tail--;
    const item = this.#items[this.#tail]!;
    this.#items[this.#tail] = undefined;
    if (this.#tail === this.#head) {
      this.#head = 0;
      this.#tail = 0;
    }
    return item;
  }

  clear(): void {
    this.#items.fill(undefined, this.#head, this.#tail);
    this.#head = 0;
    this.#tail = 0;
  }

  /** Moves the live items to the front (the head has run far ahead). */
  #compact(): void {
    const n = this.#tail - this.#head;
    this.#items.copyWithin(0, this.#head, this.#tail);
    this.#at.copyWithin(0, this.#head, this.#tail);
    this.#tag.copyWithin(0, this.#head, this.#tail);
    // Only the moved items' old slots hold references: shift cleared every slot below the head
    // (compaction runs with head >= tail - head, so they do not overlap the new ones).
    this.#items.fill(undefined, this.#head, this.#tail);
    this.#head = 0;
    this.#tail = n;
  }
}
