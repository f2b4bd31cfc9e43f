import {
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';

export const API_TOKEN = Symbol('API_TOKEN');

/**
 * REST calls, reads included (runs and campaigns reveal targets and prompts), need
 * `Authorization: Bearer <FATHOM_API_TOKEN>` when a token is configured; /health, /metrics, the
 * OpenAPI document and the Alertmanager webhook (its own secret) do not. Without a token (the
 * embedded default on loopback; `fathom up` refuses other addresses without one) the API is open.
 */
@Injectable()
export class ApiTokenGuard implements CanActivate {
  constructor(@Inject(API_TOKEN) private readonly token: string | null) {}

  canActivate(context: ExecutionContext): boolean {
    if (!this.token) return true;
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    const header = request.headers.authorization ?? '';
    const presented = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
    const a = Buffer.from(presented);
    const b = Buffer.from(this.token);
    if (a.length !== b.length || !timingSafeEqual(a, b)) {
      throw new UnauthorizedException('a valid bearer token is required');
    }
    return true;
  }
}
