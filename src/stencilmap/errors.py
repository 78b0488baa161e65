"""User-facing errors: one line that says where (file:line:col or a JSON path) and what."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Location:
    """Where in the user's input a problem lies: a file with line/column, or a JSON path."""

    file: str | None = None
    line: int | None = None
    column: int | None = None
    json_path: str | None = None

    def __str__(self) -> str:
        parts: list[str] = []
        if self.file is not None:
            parts.append(self.file)
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        text = ":".join(parts)
        if self.json_path is not None:
            text = f"{text}: {self.json_path}" if text else self.json_path
        return text


class StencilmapError(Exception):
    """An error caused by the user's input; the CLI prints it as one line and exits with status 2."""

    def __init__(self, message: str, where: Location | str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        where = str(self.where) if self.where is not None else ""
        return f"{where}: {self.message}" if where else self.message
