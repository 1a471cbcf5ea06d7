"""The writing direction: `OnnxExport` walks a network's steps through the writer table
(`writers/`, one writer per step type) and lowers primitives through the shared node table
(`nodes`, with its spatial and sequence groups), all onto the tape (`..graph`)."""
