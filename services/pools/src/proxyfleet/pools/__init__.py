"""The pool controller (issue 20): keeps every declared pool true."""
