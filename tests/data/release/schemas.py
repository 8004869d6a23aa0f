from pydantic import BaseModel


class Ticket(BaseModel):
    repo: str
    branch: str = "main"


class Review(BaseModel):
    repo: str
    branch: str


class Audit(BaseModel):
    repo: str


class Findings(BaseModel):
    count: int
