import {
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { bearerTokenMatches } from './http/bearer-token.util';

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
    if (!bearerTokenMatches(request.headers.authorization, this.token)) {
      throw new UnauthorizedException('a valid bearer token is required');
    }
    return true;
  }
}
