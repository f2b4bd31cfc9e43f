import { Controller, Get, Inject, Optional } from '@nestjs/common';
import type { z } from 'zod';
import { buildOpenApiDocument, type OpenApiPaths } from './openapi.document';

/** Paths and schemas other feature modules add to the document (shadow testing). */
export const OPENAPI_EXTENSIONS = Symbol('OPENAPI_EXTENSIONS');
export interface OpenApiExtension {
  paths: OpenApiPaths;
  schemas: Record<string, z.ZodType>;
}

/** `GET /docs`: the OpenAPI 3.1 document of the REST API (JSON). */
@Controller('docs')
export class DocsController {
  private document: Record<string, unknown> | null = null;

  constructor(@Optional() @Inject(OPENAPI_EXTENSIONS) private readonly extension: OpenApiExtension | null) {}

  @Get()
  get(): Record<string, unknown> {
    this.document ??= buildOpenApiDocument(this.extension?.paths, this.extension?.schemas);
    return this.document;
  }

  @Get('openapi.json')
  file(): Record<string, unknown> {
    return this.get();
  }
}
