"""The document tools.

Parsing uploads with limits (in a child process), document.extract, ai.process,
document.generateReport and the PDF writer.
"""
