"""What a job tells the task log and XCom while it runs and when it ends: progress lines,
host log selection, failure analysis and the goodput ledger. Pure, and shared by both backends.
"""
