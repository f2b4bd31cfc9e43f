import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { FieldValidationError } from '@fathom/contracts';

interface HttpResponse {
  status(code: number): { json(body: unknown): unknown };
}

@Catch(FieldValidationError)
export class FieldValidationFilter implements ExceptionFilter {
  catch(error: FieldValidationError, host: ArgumentsHost): void {
    host
      .switchToHttp()
      .getResponse<HttpResponse>()
      .status(400)
      .json({ statusCode: 400, message: error.message, issues: error.issues });
  }
}
