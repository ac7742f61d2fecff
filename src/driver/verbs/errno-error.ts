import { errno, errnoName } from '../../device/abi/constants.js';
import { RnicError } from '../../wire/errors.js';

/**
 * What a verb that returns a pointer in C throws where C would return NULL
 * and set errno. `code` is the errno name ('EINVAL'), `errno` its number.
 */
export class VerbsError extends RnicError<string> {
  readonly errno: number;
  constructor(errnoValue: number, message: string) {
    super(errnoName(errnoValue), message);
    this.name = 'VerbsError';
    this.errno = errnoValue;
  }
}

export function verbsError(name: keyof typeof errno, message: string): VerbsError {
  return new VerbsError(errno[name], message);
}
