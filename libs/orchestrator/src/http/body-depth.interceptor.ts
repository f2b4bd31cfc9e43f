import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { MAX_INPUT_DEPTH, nestsDeeperThan, FieldValidationError } from '@fathom/contracts';
import type { Observable } from 'rxjs';

/** Every JSON body nested deeper than MAX_INPUT_DEPTH gets a 400 before a handler sees it. */
@Injectable()
export class BodyDepthInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const body = context.switchToHttp().getRequest<{ body?: unknown }>().body;
    if (nestsDeeperThan(body))
      throw new FieldValidationError('body', [
        { field: '(root)', message: `nested deeper than ${MAX_INPUT_DEPTH} levels` },
      ]);
    return next.handle();
  }
}
