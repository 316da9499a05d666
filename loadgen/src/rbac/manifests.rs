//! Multi-document YAML manifests (`kubectl apply -f` files) read into JSON objects.

use serde_json::Value;

/// Why a manifest file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// A document is not valid YAML (or not representable as JSON).
    #[error("document {index} (from line {line}): {source}")]
    Yaml {
        /// The document's position in the file, from 0, counting empty ones.
        index: usize,
        /// The line its first line has in the file, from 1.
        line: usize,
        /// The parser's error (its line is relative to the document), boxed: it is large.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// A document is YAML but not a mapping, so not an object.
    #[error("document {index} (from line {line}) is not an object")]
    NotAnObject {
        /// The document's position in the file, from 0, counting empty ones.
        index: usize,
        /// The line its first line has in the file, from 1.
        line: usize,
    },
}

/// The objects of a multi-document YAML file, in order; documents holding nothing (or only
/// comments, or `null`) are skipped. The file is split at `---` lines (a line that starts with
/// `---` then ends or continues with a space, which YAML forbids inside any scalar) and each
/// document parsed on its own, so an error names its document.
pub fn parse_manifests(yaml: &str) -> Result<Vec<Value>, ManifestError> {
    let mut objects = Vec::new();
    for (index, (line, document)) in split_documents(yaml).into_iter().enumerate() {
        if is_blank(&document) {
            continue;
        }
        let value: Value =
            serde_saphyr::from_str(&document).map_err(|source| ManifestError::Yaml {
                index,
                line,
                source: Box::new(source),
            })?;
        match value {
            Value::Null => {}
            Value::Object(_) => objects.push(value),
            _ => return Err(ManifestError::NotAnObject { index, line }),
        }
    }
    Ok(objects)
}

/// The documents of `yaml` with the line each starts on; text after `---` on its marker line
/// belongs to the document.
fn split_documents(yaml: &str) -> Vec<(usize, String)> {
    let mut documents = vec![(1, String::new())];
    for (i, line) in yaml.lines().enumerate() {
        let rest = line.strip_prefix("---");
        match rest {
            Some(rest) if rest.is_empty() || rest.starts_with([' ', '\t']) => {
                documents.push((i + 1, format!("{rest}\n")));
            }
            _ => {
                if let Some((_, document)) = documents.last_mut() {
                    document.push_str(line);
                    document.push('\n');
                }
            }
        }
    }
    documents
}

/// Whether a document has nothing but whitespace, comments and document-end markers.
fn is_blank(document: &str) -> bool {
    document.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#') || l == "..."
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_are_read_in_order_and_empty_ones_skipped() {
        let yaml = "# header\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n\
                    ---\n# nothing here\n---\n---\nkind: ClusterRole\nrules:\n- verbs: [\"get\"]\n  \
                    nonResourceURLs: [\"/healthz\"]\n  resourceNames: [\"true\"]\n";
        let objects = parse_manifests(yaml).expect("valid manifests");
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[0]["metadata"]["name"], "a");
        assert_eq!(
            objects[1]["rules"],
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resourceNames": ["true"]}])
        );
    }

    #[test]
    fn a_broken_document_is_named_by_its_index_and_line() {
        let yaml = "kind: A\n---\nkind: B\n---\nkind: [unclosed\n";
        match parse_manifests(yaml) {
            Err(ManifestError::Yaml { index, line, .. }) => assert_eq!((index, line), (2, 4)),
            other => panic!("expected a YAML error, got {other:?}"),
        }
        match parse_manifests("kind: A\n---\n- a list\n") {
            Err(ManifestError::NotAnObject { index, .. }) => assert_eq!(index, 1),
            other => panic!("expected NotAnObject, got {other:?}"),
        }
    }
}
