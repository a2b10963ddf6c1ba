// Counts the tokens of each file given (o200k_base, the GPT-4o/o-series/GPT-5 encoding) with
// npm gpt-tokenizer, offline: prints a JSON array of the counts. Used by bench/codemode.rs.
import { readFileSync } from 'node:fs';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

const counts = process.argv.slice(2).map((file) => countTokens(readFileSync(file, 'utf8')));
console.log(JSON.stringify(counts));
