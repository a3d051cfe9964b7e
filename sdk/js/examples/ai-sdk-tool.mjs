// A Vercel AI SDK tool that runs Python in a glassroom sandbox.
//
//   import { openai } from '@ai-sdk/openai'
//   const sbx = await Sandbox.create()
//   const { text } = await ask(openai('gpt-4.1'), sbx, 'What is the 30th Fibonacci number?')
//
// The model calls `runCode` as often as it needs (variables persist in the
// sandbox between calls); each call returns stdout, stderr, the cell's value
// and the error, if any.
import { generateText, isStepCount, tool } from 'ai'
import { z } from 'zod'

/** The tool, bound to one sandbox. */
export function codeInterpreterTool(sandbox) {
  return tool({
    description: 'Run Python code in a persistent Jupyter kernel (pandas, numpy, matplotlib installed); variables persist between calls. Returns stdout, stderr, the value of the last expression and any error.',
    inputSchema: z.object({ code: z.string().describe('the Python code to run') }),
    execute: async ({ code }) => {
      const x = await sandbox.runCode(code, { timeoutMs: 60_000 })
      return {
        stdout: x.logs.stdout.join(''),
        stderr: x.logs.stderr.join(''),
        result: x.text ?? null,
        error: x.error ? `${x.error.name}: ${x.error.value}` : null,
      }
    },
  })
}

/** Asks `model` a question it may answer by running code in `sandbox`. */
export async function ask(model, sandbox, question) {
  return generateText({
    model,
    tools: { runCode: codeInterpreterTool(sandbox) },
    stopWhen: isStepCount(5),
    prompt: question,
  })
}
