/**
 * A configuration mistake, one line naming the setting. Its own module so
 * that what only needs the error (device set-up on a worker thread) does not
 * load the configuration's schema (zod) with it.
 */
import { RnicError } from '../wire/errors.js';

export class ConfigError extends RnicError<'CONFIG_INVALID'> {
  constructor(message: string) {
    super('CONFIG_INVALID', message);
    this.name = 'ConfigError';
  }
}
