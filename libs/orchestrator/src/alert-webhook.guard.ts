import {
  Inject,
  Injectable,
  ServiceUnavailableException,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { bearerTokenMatches } from './http/bearer-token.util';
import { ORCHESTRATOR_SETTINGS, type OrchestratorSettings } from './orchestrator.settings';

/**
 * The Alertmanager webhook needs `Authorization: Bearer <FATHOM_ALERT_WEBHOOK_SECRET>`
 * (Alertmanager: `webhook_configs[].http_config.authorization.credentials`). Unlike the API
 * token, an unset secret does not open the endpoint: the webhook is then refused with 503.
 */
@Injectable()
export class AlertWebhookGuard implements CanActivate {
  constructor(@Inject(ORCHESTRATOR_SETTINGS) private readonly config: OrchestratorSettings) {}

  canActivate(context: ExecutionContext): boolean {
    const secret = this.config.FATHOM_ALERT_WEBHOOK_SECRET;
    if (!secret)
      throw new ServiceUnavailableException('alert webhook disabled: FATHOM_ALERT_WEBHOOK_SECRET is not set');
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    if (!bearerTokenMatches(request.headers.authorization, secret)) {
      throw new UnauthorizedException('the webhook secret is required');
    }
    return true;
  }
}
