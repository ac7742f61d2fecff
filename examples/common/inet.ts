/**
 * `inet_ntop(AF_INET6, ...)` as glibc writes it, which is how the C tools
 * print a GID: lower-case hex words without leading zeros, the longest run
 * (first one on a tie) of two or more zero words shortened to "::", and an
 * IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d) address ending
 * in dotted decimal.
 */
export function inet_ntop6(raw: Uint8Array): string {
  if (raw.length !== 16) throw new RangeError(`inet_ntop6: need 16 bytes, got ${raw.length}`);
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push(((raw[2 * i] as number) << 8) | (raw[2 * i + 1] as number));

  // The longest run of zero words; runs of one word are not shortened.
  let bestBase = -1;
  let bestLen = 0;
  let curBase = -1;
  let curLen = 0;
  for (let i = 0; i < 8; i++) {
    if (words[i] === 0) {
      if (curBase === -1) {
        curBase = i;
        curLen = 1;
      } else {
        curLen++;
      }
    } else if (curBase !== -1) {
      if (bestBase === -1 || curLen > bestLen) {
        bestBase = curBase;
        bestLen = curLen;
      }
      curBase = -1;
    }
  }
  if (curBase !== -1 && (bestBase === -1 || curLen > bestLen)) {
    bestBase = curBase;
    bestLen = curLen;
  }
  if (bestBase !== -1 && bestLen < 2) bestBase = -1;

  let out = '';
  for (let i = 0; i < 8; i++) {
    if (bestBase !== -1 && i >= bestBase && i < bestBase + bestLen) {
      if (i === bestBase) out += ':';
      continue;
    }
    if (i !== 0) out += ':';
    if (i === 6 && bestBase === 0 && (bestLen === 6 || (bestLen === 5 && words[5] === 0xffff))) {
      out += `${raw[12]}.${raw[13]}.${raw[14]}.${raw[15]}`;
      return out;
    }
    out += (words[i] as number).toString(16);
  }
  if (bestBase !== -1 && bestBase + bestLen === 8) out += ':';
  return out;
}
