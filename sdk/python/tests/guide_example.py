from glassroom import Sandbox
sandbox = Sandbox()
execution = sandbox.run_code("""
import numpy as np
data = [23, 45, 67, 89, 12, 34, 56]
print(f"均值: {np.mean(data):.2f}")
print(f"标准差: {np.std(data):.2f}")
""")
print(execution.logs.stdout)
sandbox.close()
