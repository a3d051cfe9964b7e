// A LangChain.js tool that runs Python in a glassroom sandbox.
//
//   import { ChatOpenAI } from '@langchain/openai'
//   const sbx = await Sandbox.create()
//   const answer = await ask(new ChatOpenAI({ model: 'gpt-4.1' }), sbx, 'What is 2**100?')
//
// (With LangGraph: createReactAgent({ llm, tools: [codeInterpreterTool(sbx)] }).)
import { tool } from '@langchain/core/tools'
import { HumanMessage } from '@langchain/core/messages'
import { z } from 'zod'

/** The tool, bound to one sandbox. */
export function codeInterpreterTool(sandbox) {
  return tool(
    async ({ code }) => {
      const x = await sandbox.runCode(code, { timeoutMs: 60_000 })
      return JSON.stringify({
        stdout: x.logs.stdout.join(''),
        stderr: x.logs.stderr.join(''),
        result: x.text ?? null,
        error: x.error ? `${x.error.name}: ${x.error.value}` : null,
      })
    },
    {
      name: 'run_code',
      description: 'Run Python code in a persistent Jupyter kernel (pandas, numpy, matplotlib installed); variables persist between calls. Returns JSON with stdout, stderr, the value of the last expression and any error.',
      schema: z.object({ code: z.string().describe('the Python code to run') }),
    }
  )
}

/** A minimal tool-calling loop: the model calls run_code until it answers. */
export async function ask(model, sandbox, question, maxSteps = 5) {
  const codeTool = codeInterpreterTool(sandbox)
  const llm = model.bindTools([codeTool])
  const messages = [new HumanMessage(question)]
  for (let i = 0; i < maxSteps; i++) {
    const reply = await llm.invoke(messages)
    messages.push(reply)
    if (!reply.tool_calls?.length) return { answer: reply.content, messages }
    for (const call of reply.tool_calls) messages.push(await codeTool.invoke(call))
  }
  return { answer: null, messages }
}
